onmt_train -config ${WORKDIR}/jobs/lstm_plateau_s2/config.yaml -train_from ${WORKDIR}/jobs/lstm_plateau_s2/model_step_8000.pt -xl_exact_resume

onmt_train -config ${WORKDIR}/jobs/baseline_s3/config.yaml
onmt_train -config ${WORKDIR}/jobs/baseline_s3/config.yaml -train_from ${WORKDIR}/jobs/baseline_s3/model_step_2000.pt -exact_resume
onmt_average_models -models ${WORKDIR}/jobs/baseline_s3/model_step_6000.pt ${WORKDIR}/jobs/baseline_s3/model_step_6500.pt ${WORKDIR}/jobs/baseline_s3/model_step_7000.pt ${WORKDIR}/jobs/baseline_s3/model_step_7500.pt ${WORKDIR}/jobs/baseline_s3/model_step_8000.pt -output ${WORKDIR}/jobs/baseline_s3/average5_step_8000.pt.partial
onmt_translate -model ${WORKDIR}/jobs/baseline_s3/average5_step_8000.pt -src ${WORKDIR}/data/valid.src -output ${WORKDIR}/jobs/baseline_s3/hyp.valid.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 3 -cpu_precision auto
onmt_translate -model ${WORKDIR}/jobs/baseline_s3/average5_step_8000.pt -src ${WORKDIR}/data/test.src -output ${WORKDIR}/jobs/baseline_s3/hyp.test.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 3 -cpu_precision auto

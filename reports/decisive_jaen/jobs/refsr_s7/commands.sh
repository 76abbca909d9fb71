onmt_train -config ${WORKDIR}/jobs/refsr_s7/config.yaml
onmt_train -config ${WORKDIR}/jobs/refsr_s7/config.yaml -train_from ${WORKDIR}/jobs/refsr_s7/model_step_5500.pt -xl_exact_resume
onmt_average_models -models ${WORKDIR}/jobs/refsr_s7/model_step_6000.pt ${WORKDIR}/jobs/refsr_s7/model_step_6500.pt ${WORKDIR}/jobs/refsr_s7/model_step_7000.pt ${WORKDIR}/jobs/refsr_s7/model_step_7500.pt ${WORKDIR}/jobs/refsr_s7/model_step_8000.pt -output ${WORKDIR}/jobs/refsr_s7/average5_step_8000.pt.partial
onmt_translate -model ${WORKDIR}/jobs/refsr_s7/average5_step_8000.pt -src ${WORKDIR}/data/valid.src -output ${WORKDIR}/jobs/refsr_s7/hyp.valid.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 7 -xl_cpu_precision auto -xl_cpu_kernels fast
onmt_translate -model ${WORKDIR}/jobs/refsr_s7/average5_step_8000.pt -src ${WORKDIR}/data/test.src -output ${WORKDIR}/jobs/refsr_s7/hyp.test.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 7 -xl_cpu_precision auto -xl_cpu_kernels fast

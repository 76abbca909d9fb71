onmt_train -config ${WORKDIR}/jobs/baseline_seed5678/config.yaml
onmt_train -config ${WORKDIR}/jobs/baseline_seed5678/config.yaml
onmt_train -config ${WORKDIR}/jobs/baseline_seed5678/config.yaml -train_from ${WORKDIR}/jobs/baseline_seed5678/model_step_500.pt
onmt_translate -model ${WORKDIR}/jobs/baseline_seed5678/model_step_1500.pt -src ${WORKDIR}/data/test.src -output ${WORKDIR}/jobs/baseline_seed5678/hyp.test.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 5678
onmt_translate -model ${WORKDIR}/jobs/baseline_seed5678/model_step_1500.pt -src ${WORKDIR}/data/valid.src -output ${WORKDIR}/jobs/baseline_seed5678/hyp.valid.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 5678

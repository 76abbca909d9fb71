onmt_train -config ${WORKDIR}/jobs/relative_pe/config.yaml
onmt_translate -model ${WORKDIR}/jobs/relative_pe/model_step_1500.pt -src ${WORKDIR}/data/test.src -output ${WORKDIR}/jobs/relative_pe/hyp.test.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 1234
onmt_translate -model ${WORKDIR}/jobs/relative_pe/model_step_1500.pt -src ${WORKDIR}/data/valid.src -output ${WORKDIR}/jobs/relative_pe/hyp.valid.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 1234

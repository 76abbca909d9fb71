onmt_train -config ${WORKDIR}/jobs/encoder_free/config.yaml
onmt_translate -model ${WORKDIR}/jobs/encoder_free/model_step_1500.pt -src ${WORKDIR}/data/test.src -output ${WORKDIR}/jobs/encoder_free/hyp.test.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 1234
onmt_translate -model ${WORKDIR}/jobs/encoder_free/model_step_1500.pt -src ${WORKDIR}/data/valid.src -output ${WORKDIR}/jobs/encoder_free/hyp.valid.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 1234

/root/.pyenv/versions/3.11.7/bin/onmt_train -config ${WORKDIR}/jobs/enc_re/config.yaml
/root/.pyenv/versions/3.11.7/bin/onmt_translate -model ${WORKDIR}/jobs/enc_re/model_step_1500.pt -src ${WORKDIR}/data/test.src -output ${WORKDIR}/jobs/enc_re/hyp.test.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 1234
/root/.pyenv/versions/3.11.7/bin/onmt_translate -model ${WORKDIR}/jobs/enc_re/model_step_1500.pt -src ${WORKDIR}/data/valid.src -output ${WORKDIR}/jobs/enc_re/hyp.valid.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 1234

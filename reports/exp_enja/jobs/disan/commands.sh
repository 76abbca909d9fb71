/root/.pyenv/versions/3.11.7/bin/onmt_train -config ${WORKDIR}/jobs/disan/config.yaml
/root/.pyenv/versions/3.11.7/bin/onmt_train -config ${WORKDIR}/jobs/disan/config.yaml -train_from ${WORKDIR}/jobs/disan/model_step_1000.pt
/root/.pyenv/versions/3.11.7/bin/onmt_translate -model ${WORKDIR}/jobs/disan/model_step_1500.pt -src ${WORKDIR}/data/test.src -output ${WORKDIR}/jobs/disan/hyp.test.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 1234
/root/.pyenv/versions/3.11.7/bin/onmt_translate -model ${WORKDIR}/jobs/disan/model_step_1500.pt -src ${WORKDIR}/data/valid.src -output ${WORKDIR}/jobs/disan/hyp.valid.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 1234

/root/.pyenv/versions/3.11.7/bin/onmt_train -config ${WORKDIR}/jobs/refsr/config.yaml
/root/.pyenv/versions/3.11.7/bin/onmt_train -config ${WORKDIR}/jobs/refsr/config.yaml -train_from ${WORKDIR}/jobs/refsr/model_step_1000.pt
/root/.pyenv/versions/3.11.7/bin/onmt_translate -model ${WORKDIR}/jobs/refsr/model_step_1500.pt -src ${WORKDIR}/data/test.src -output ${WORKDIR}/jobs/refsr/hyp.test.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 1234
/root/.pyenv/versions/3.11.7/bin/onmt_translate -model ${WORKDIR}/jobs/refsr/model_step_1500.pt -src ${WORKDIR}/data/valid.src -output ${WORKDIR}/jobs/refsr/hyp.valid.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 1234

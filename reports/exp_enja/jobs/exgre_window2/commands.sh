/root/.pyenv/versions/3.11.7/bin/onmt_train -config ${WORKDIR}/jobs/exgre_window2/config.yaml
/root/.pyenv/versions/3.11.7/bin/onmt_train -config ${WORKDIR}/jobs/exgre_window2/config.yaml -train_from ${WORKDIR}/jobs/exgre_window2/model_step_1000.pt
/root/.pyenv/versions/3.11.7/bin/onmt_translate -model ${WORKDIR}/jobs/exgre_window2/model_step_1500.pt -src ${WORKDIR}/data/test.src -output ${WORKDIR}/jobs/exgre_window2/hyp.test.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 1234
/root/.pyenv/versions/3.11.7/bin/onmt_translate -model ${WORKDIR}/jobs/exgre_window2/model_step_1500.pt -src ${WORKDIR}/data/valid.src -output ${WORKDIR}/jobs/exgre_window2/hyp.valid.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 1234

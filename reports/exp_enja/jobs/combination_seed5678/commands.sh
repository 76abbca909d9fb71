onmt_train -config ${WORKDIR}/jobs/combination_seed5678/config.yaml
onmt_train -config ${WORKDIR}/jobs/combination_seed5678/config.yaml -train_from ${WORKDIR}/jobs/combination_seed5678/model_step_500.pt
onmt_translate -model ${WORKDIR}/jobs/combination_seed5678/model_step_1500.pt -src ${WORKDIR}/data/test.src -output ${WORKDIR}/jobs/combination_seed5678/hyp.test.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 5678 -transforms xl_position -xl_preorderer ${WORKDIR}/preorderer.xlp
onmt_translate -model ${WORKDIR}/jobs/combination_seed5678/model_step_1500.pt -src ${WORKDIR}/data/valid.src -output ${WORKDIR}/jobs/combination_seed5678/hyp.valid.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 5678 -transforms xl_position -xl_preorderer ${WORKDIR}/preorderer.xlp

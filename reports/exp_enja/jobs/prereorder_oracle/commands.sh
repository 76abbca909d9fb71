onmt_train -config ${WORKDIR}/jobs/prereorder_oracle/config.yaml
onmt_translate -model ${WORKDIR}/jobs/prereorder_oracle/model_step_1500.pt -src ${WORKDIR}/data/test.src -output ${WORKDIR}/jobs/prereorder_oracle/hyp.oracle.partial -beam_size 5 -batch_size 64 -batch_type sents -seed 1234 -transforms xl_prereorder -xl_source align -xl_align_path ${WORKDIR}/align/test.gdfa

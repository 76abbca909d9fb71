#!/bin/bash
# The papers' report from the archives, in one command: each study's evidence report is regenerated in a fresh
# work directory from its archive under reports/ (the commands of reports/EVIDENCE.md and
# reports/PREREG_decisive.md), then `onmt-xl papers` reads their JSON and writes reports/PAPERS.md.
#   bash tools/study/papers_report.sh              # every study whose archive exists
#   PAPERS_ONLY=1 bash tools/study/papers_report.sh   # reports/PAPERS.md alone, from the committed JSON (seconds)
#   DECISIVE_SEEDS=1,2,3,4,5 bash tools/study/papers_report.sh   # the decisive design at k = 5 (the default once the
#                                                          # precision rule's 8 seeds are all archived is k = 8)
set -euo pipefail
cd "$(dirname "$0")/../.."
# the checkout's code, whatever copy of onmt_xl is installed (a stale site copy would write stale reports)
onmt_xl_cli() { PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" python3 -m onmt_xl.experiments "$@"; }
WORK=${WORK:-$(mktemp -d -t onmt_xl_papers.XXXXXX)}
finished_runs() {  # $1: seeds joined by commas, then systems; prints how many of their runs are archived
  local n=0 s sys seeds=$1; shift
  for s in ${seeds//,/ }; do
    for sys in "$@"; do
      [ -f "reports/decisive_jaen/jobs/${sys}_s$s/done.json" ] && [ -f "reports/decisive_jaen/jobs/${sys}_s$s/hyp.test.gz" ] \
        && n=$((n + 1))
    done
  done
  echo "$n"
}
primary_runs() { finished_runs "$1" baseline combination; }
archived_runs() {  # $1: an archive, $2: a system; prints how many of its seeds 1-8 have their test translation there
  local n=0 s
  for s in 1 2 3 4 5 6 7 8; do [ -f "$1/jobs/$2_s$s/hyp.test.gz" ] && n=$((n + 1)); done
  echo "$n"
}
# k = 8 once the precision rule's extension is archived whole, else the preregistered k = 5
[ "$(primary_runs 1,2,3,4,5,6,7,8)" -eq 16 ] && DEFAULT_SEEDS=1,2,3,4,5,6,7,8 || DEFAULT_SEEDS=1,2,3,4,5
DECISIVE_SEEDS=${DECISIVE_SEEDS:-$DEFAULT_SEEDS}
DECISIVE_OTHERS=relative_pe,encoder_free,disan,enc_re,both_re,exgre,refsr,prereorder
DECISIVE_TAB4=encoder_free_none,encoder_free_relative,encoder_free_inxl,lstm
papers_md() {  # reports/PAPERS.md from the studies in "${studies[@]}" and every tier's progress in the archives
  local progress=(--progress reports/decisive_jaen:c,i,d,h --progress "reports/decisive_jaen:f,g:$DECISIVE_SEEDS")
  [ -d reports/decisive_jaen_tuned ] && progress=(--progress reports/decisive_jaen_tuned:e:1,2,3,4,5,6,7,8 "${progress[@]}")
  [ -d reports/decisive_jaen_inxl ] && progress+=(--progress reports/decisive_jaen_inxl:g:1,2,3,4,5,6,7,8)
  # issue 78's seeds 3-8 of ExGRE and ReFSR (tools/study/xlpos_queue.sh stage fewseed): their rows, and their Holm
  # family's, read (partial) until all 12 are archived
  progress+=(--progress reports/decisive_jaen:c:3,4,5,6,7,8:exgre,refsr)
  # the encoder-free systems' seeds 3-8 (stage encfree, reports/PREREG_encfree_seeds.md): tier c's and tier h's
  progress+=(--progress reports/decisive_jaen:c:3,4,5,6,7,8:encoder_free
             --progress reports/decisive_jaen:h:3,4,5,6,7,8:encoder_free_relative,encoder_free_inxl)
  onmt_xl_cli papers "${studies[@]}" "${progress[@]}" --report reports/PAPERS.md > /dev/null
  echo "[papers_report] wrote reports/PAPERS.md (and .json)" >&2
}
# PAPERS_ONLY=1: only PAPERS.md again, from the evidence reports' committed JSON (seconds; after collecting jobs,
# whose archives its progress table reads): with no --study, `onmt-xl papers` reads every default study that exists
if [ "${PAPERS_ONLY:-0}" = 1 ]; then
  studies=()
  papers_md
  exit 0
fi
echo "[papers_report] fresh work directories under $WORK" >&2

onmt_xl_cli evidence --workdir "$WORK/evidence_jaen" --stage report --archive reports/evidence_jaen \
  --preorder-pairs 10000,25000 --report reports/EVIDENCE_jaen.md > /dev/null
onmt_xl_cli evidence --workdir "$WORK/evidence_enja" --src en --tgt ja --gold-text "" --gold-align "" --stage report \
  --archive reports/evidence_enja --systems baseline,combination --seeds 1,2,3 --report reports/EVIDENCE_enja.md > /dev/null
studies=(--study jaen=reports/EVIDENCE_jaen.json --study enja=reports/EVIDENCE_enja.json)
# the GPU route's work directories (tools/study/gpu_evidence.sh), where a lent GPU trained tiers c, h and d
for name in evidence_jaen_gpu evidence_jaen_gpu_d; do
  if [ -d "reports/$name" ]; then
    onmt_xl_cli evidence --workdir "$WORK/$name" --stage report --archive "reports/$name" \
      --report "reports/EVIDENCE_${name#evidence_}.md" > /dev/null
    studies+=(--study "${name#evidence_}=reports/EVIDENCE_${name#evidence_}.json")
  fi
done
# the preregistered design is analysed only once all its primary runs are finished (reports/PREREG_decisive.md)
done_runs=$(primary_runs "$DECISIVE_SEEDS")
n_seeds=$(echo "$DECISIVE_SEEDS" | tr ',' '\n' | wc -l)
need=$(( 2 * n_seeds ))
if [ "$done_runs" -lt "$need" ]; then
  echo "[papers_report] decisive design: $done_runs of $need primary runs archived; not analysed before its end" >&2
else
  # a secondary (HeadXL, InXL) is analysed only once all its runs are finished, with the primary's seeds
  # (reports/PREREG_decisive.md); until then its tier's progress row says what is left
  secondary=()
  for sys in headxl inxl; do
    [ "$(finished_runs "$DECISIVE_SEEDS" "$sys")" -eq "$n_seeds" ] && secondary+=("$sys")
  done
  secondary_systems=$(IFS=,; echo "${secondary[*]:-}")
  # the secondary family is declared whole, so a row of it reads partial while a member still trains
  families="primary=combination;secondary=headxl,inxl"
  # the preregistered families, then the other papers' systems on the same split (reports/PREREG_decisive_baselines.md;
  # seeds 1-2, read from the seeds given)
  decisive_report() {  # $1: work directory name, $2: archive, $3: report
    onmt_xl_cli evidence --workdir "$WORK/$1" --archive "$2" --test-from-train 5000 \
      --stage report --systems "baseline,combination,${secondary_systems:+$secondary_systems,}$DECISIVE_OTHERS,$DECISIVE_TAB4" \
      --seeds "$DECISIVE_SEEDS" \
      --families "$families;the other baselines=$DECISIVE_OTHERS;Tab. 4=$DECISIVE_TAB4" \
      --samples 10000 --bootstrap-seed 12345 --report "$3" > /dev/null
  }
  decisive_report decisive_jaen reports/decisive_jaen reports/DECISIVE_jaen.md
  studies+=(--study decisive=reports/DECISIVE_jaen.json)
  # once ExGRE's and ReFSR's seeds 3-8 (issue 78, stage fewseed) are archived, the design as it read before them
  # and before the encoder-free systems' seeds 3-8 (stage encfree; papers.FEWSEED_SYSTEMS): the same report from a
  # view of its archive without those jobs, so that PAPERS.md notes each verdict they changed
  if [ "$(archived_runs reports/decisive_jaen exgre)" -eq 8 ] && [ "$(archived_runs reports/decisive_jaen refsr)" -eq 8 ]; then
    view="$WORK/decisive_jaen_2seeds_archive"
    mkdir -p "$view/jobs"
    for f in reports/decisive_jaen/*; do [ "${f##*/}" = jobs ] || ln -s "$PWD/$f" "$view/"; done
    for j in reports/decisive_jaen/jobs/*; do
      case "${j##*/}" in
        exgre_s[3-8] | refsr_s[3-8] | encoder_free_s[3-8] | encoder_free_relative_s[3-8] | encoder_free_inxl_s[3-8]) ;;
        *) ln -s "$PWD/$j" "$view/jobs/" ;;
      esac
    done
    decisive_report decisive_jaen_2seeds "$view" reports/DECISIVE_jaen_2seeds.md
    studies+=(--study decisive_2seeds=reports/DECISIVE_jaen_2seeds.json)
  fi
fi
# the addendum with InXL's tuned start (reports/PREREG_decisive_tuned.md): k = 8 fixed, analysed once its 8
# Combination runs are archived
tuned=$(archived_runs reports/decisive_jaen_tuned combination)
if [ "$tuned" -lt 8 ]; then
  [ -d reports/decisive_jaen_tuned ] && echo "[papers_report] decisive addendum: $tuned of 8 Combination runs archived; not analysed before its end" >&2
else
  onmt_xl_cli evidence --workdir "$WORK/decisive_jaen_tuned" --archive reports/decisive_jaen_tuned --test-from-train 5000 \
    --stage report --systems baseline,combination --seeds 1,2,3,4,5,6,7,8 --families "primary=combination" \
    --samples 10000 --bootstrap-seed 12345 --prereg reports/PREREG_decisive_tuned.md \
    --report reports/DECISIVE_jaen_tuned.md > /dev/null
  studies+=(--study decisive_tuned=reports/DECISIVE_jaen_tuned.json)
  # descriptive (the addendum's preregistration): the two Combinations, tuned − identity start, on the same 5,500
  # pairs, and each against the design's baseline runs (the same runs in both archives)
  python3 tools/study/compare_archives.py --before reports/decisive_jaen --after reports/decisive_jaen_tuned \
    --systems combination --refs "$WORK/decisive_jaen_tuned/data/test.ref" --samples 10000 \
    --report reports/MOVED_inxl_start_decisive.md > /dev/null
  echo "[papers_report] wrote reports/MOVED_inxl_start_decisive.md" >&2
fi
# issue 78: InXL with its default start on the design's split (tools/study/xlpos_queue.sh stage inxl), analysed once
# its 8 runs are archived, against the design's 8 baseline runs, copied into its archive as the addendum's were
ninxl=$(archived_runs reports/decisive_jaen_inxl inxl)
if [ "$ninxl" -lt 8 ]; then
  [ -d reports/decisive_jaen_inxl ] && echo "[papers_report] InXL's default start: $ninxl of 8 runs archived; not analysed before its end" >&2
else
  for s in 1 2 3 4 5 6 7 8; do
    [ -d "reports/decisive_jaen_inxl/jobs/baseline_s$s" ] || cp -a "reports/decisive_jaen/jobs/baseline_s$s" reports/decisive_jaen_inxl/jobs/
  done
  onmt_xl_cli evidence --workdir "$WORK/decisive_jaen_inxl" --archive reports/decisive_jaen_inxl --test-from-train 5000 \
    --stage report --systems baseline,inxl --seeds 1,2,3,4,5,6,7,8 --families "primary=inxl" \
    --samples 10000 --bootstrap-seed 12345 --report reports/DECISIVE_jaen_inxl.md > /dev/null
  studies+=(--study decisive_inxl=reports/DECISIVE_jaen_inxl.json)
fi
# the third look (reports/PREREG_xlpos.md): Combination on cross-fitted positions of the chosen source, analysed
# once its 8 runs are archived, against the design's baseline runs after the drift check of the control
xfit=$(archived_runs reports/decisive_jaen_xlpos_src combination_xfit)
if [ "$xfit" -lt 8 ]; then
  [ -d reports/decisive_jaen_xlpos_src ] && echo "[papers_report] third look: $xfit of 8 runs archived; not analysed before its end" >&2
else
  # the design's split, staged from its archive (the report stage restores and stages it; that report is not used)
  onmt_xl_cli evidence --workdir "$WORK/decisive_jaen_xlpos_src" --archive reports/decisive_jaen_xlpos_src \
    --test-from-train 5000 --stage report --systems baseline --seeds 1 --report "$WORK/xlpos_staging.md" > /dev/null
  PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" python3 -m onmt_xl.experiments.xlpos_report \
    --data "$WORK/decisive_jaen_xlpos_src" --design reports/decisive_jaen_xlpos_src --control reports/decisive_jaen \
    --drift reports/decisive_jaen_xlpos --tuned reports/decisive_jaen_tuned --old-source reports/decisive_jaen_xlpos \
    --looks reports/DECISIVE_jaen.json,reports/DECISIVE_jaen_tuned.json \
    --payoff reports/decisive_jaen_xlpos_src/payoff.json --workdir "$WORK/decisive_jaen_xlpos_report" \
    --report reports/DECISIVE_jaen_xlpos.md > /dev/null
  echo "[papers_report] wrote reports/DECISIVE_jaen_xlpos.md" >&2
fi
# the decisive split's tiers on a lent GPU (tools/study/gpu_evidence.sh waves 4-6; reports/PREREG_decisive_baselines.md),
# each work directory with its own baseline (or default) runs
if [ -d reports/decisive_jaen_gpu ]; then
  onmt_xl_cli evidence --workdir "$WORK/decisive_jaen_gpu" --archive reports/decisive_jaen_gpu --test-from-train 5000 \
    --stage report --systems "baseline,combination,$DECISIVE_OTHERS,$DECISIVE_TAB4" --seeds 1,2,3,4 \
    --families "primary=combination;the other baselines=$DECISIVE_OTHERS;Tab. 4=$DECISIVE_TAB4" \
    --samples 10000 --bootstrap-seed 12345 --report reports/DECISIVE_jaen_gpu.md > /dev/null
  studies+=(--study decisive_gpu=reports/DECISIVE_jaen_gpu.json)
fi
if [ -d reports/decisive_jaen_gpu_d ]; then
  onmt_xl_cli evidence --workdir "$WORK/decisive_jaen_gpu_d" --archive reports/decisive_jaen_gpu_d --test-from-train 5000 \
    --stage report --systems headxl,combination --seeds 1 --samples 10000 --bootstrap-seed 12345 \
    --report reports/DECISIVE_jaen_gpu_d.md > /dev/null
  studies+=(--study decisive_gpu_d=reports/DECISIVE_jaen_gpu_d.json)
fi
# what InXL's tuned start moved in tier (a): its identity-start runs (reports/TUNING.md) against the retrained ones
if [ -d reports/evidence_jaen_inxl_identity ]; then
  python3 tools/study/compare_archives.py --before reports/evidence_jaen_inxl_identity --after reports/evidence_jaen \
    --report reports/MOVED_inxl_start.md > /dev/null
  echo "[papers_report] wrote reports/MOVED_inxl_start.md" >&2
fi
# what is missing: each remaining tier's unfinished jobs, from the archives (reports/EVIDENCE.md, Compute plan)
papers_md

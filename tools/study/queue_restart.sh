#!/bin/bash
# Restart the study's CPU queue (tools/study/xlpos_queue.sh) in its worktree runs/queue_code on another commit
# (default: main), keeping what the queue wrote: stop the queue and its training and translation processes (each
# resumes exactly from its last checkpoint), carry the worktree's untracked and modified files under reports/ (its
# archives, the manifest it updates) across the checkout, which would otherwise overwrite those the new commit
# tracks, then start the queue again in the background, appending to runs/xlpos_queue.log.
#
#   bash tools/study/queue_restart.sh [COMMIT]      # stop, move to COMMIT (main), start
#   bash tools/study/queue_restart.sh --dry-run     # say what it would stop and carry; change nothing
#   bash tools/study/queue_restart.sh --collect     # leave the queue running; bring every archive's finished jobs
#                                                   # into the repository's reports/ and write reports/PAPERS.md's
#                                                   # progress table again (then commit them)
#
# runs/ does not survive a change of machine: collect and commit finished jobs at least once a session, or a new
# machine trains them again.
# The worktree is made on first use (git worktree add --detach runs/queue_code COMMIT).
set -u
cd "$(dirname "$0")/../.." || exit 1
Q=runs/queue_code DRY=0 COMMIT=main
case ${1:-} in
  --dry-run) DRY=1 ;;
  --collect)
    [ -d "$Q/reports" ] || { echo "queue_restart: no queue worktree $Q" >&2; exit 1; }
    for a in "$Q"/reports/*/; do
      a=${a%/}
      [ -d "$a/jobs" ] || [ -f "$a/manifest.json" ] || continue
      # the payoff curve is made again from every finished job each time: the queue's is the newer
      replace=$(cd "$a" && ls payoff.json payoff.md payoff.png 2> /dev/null | paste -sd, -)
      python3 tools/study/collect_archive.py --from "$a" --to "reports/${a##*/}" ${replace:+--replace "$replace"} \
        || exit 1
    done
    # PAPERS.md's progress table reads the archives just collected (tests/test_papers_regenerate.py checks it)
    PAPERS_ONLY=1 bash tools/study/papers_report.sh || exit 1
    exit 0 ;;
  "") ;;
  -*) echo "queue_restart: unknown option '$1' (--dry-run, --collect, or a commit)" >&2; exit 2 ;;
  *) COMMIT=$1 ;;
esac
git rev-parse --verify -q "$COMMIT^{commit}" > /dev/null || { echo "queue_restart: no commit '$COMMIT'" >&2; exit 2; }
mkdir -p runs
{ [ -e runs/shared ] || [ ! -d ../shared ] || ln -s "$(cd ../shared && pwd)" runs/shared; }
# the queue runs as a session of its own (setsid): its leader, bash tools/study/xlpos_queue.sh, and every process under
# it (the evidence runner, onmt_train, onmt_translate) share the leader's session id
sessions() { pgrep -f "^bash tools/study/xlpos_queue.sh\$" || true; }
members() { local sid; for sid in $(sessions); do pgrep -s "$sid"; done; }
running=$(members)
if [ "$DRY" = 1 ]; then
  echo "would stop: ${running:-nothing running}" | tr '\n' ' '; echo
  [ -d "$Q" ] && (cd "$Q" && { git ls-files --others --exclude-standard reports; git diff --name-only -- reports; } \
    | sort -u | sed 's/^/would carry: /')
  echo "would check out $(git rev-parse --short "$COMMIT") in $Q and start tools/study/xlpos_queue.sh"
  exit 0
fi
if [ -n "$running" ]; then
  for sid in $(sessions); do pkill -s "$sid"; done
  pids=$(echo $running | tr ' ' ',')
  for _ in $(seq 30); do ps -o pid= -p "$pids" > /dev/null || break; sleep 1; done
  ps -o pid= -p "$pids" > /dev/null && { echo "queue_restart: the queue did not stop" >&2; exit 1; }
fi
if [ ! -d "$Q" ]; then
  git worktree add --detach "$Q" "$COMMIT" || exit 1
else
  carry=$(mktemp -t queue_carry.XXXXXX.tar) || exit 1
  (cd "$Q" && { git ls-files --others --exclude-standard -z reports; git diff --name-only -z -- reports; } \
    | sort -zu | tar -cf "$carry" --null -T -) || { echo "queue_restart: could not save $Q/reports" >&2; exit 1; }
  (cd "$Q" && git checkout -q -f --detach "$COMMIT" && tar -xf "$carry") \
    || { echo "queue_restart: checkout failed; the queue's files are kept in $carry" >&2; exit 1; }
  rm -f "$carry"
fi
# a simple command in the background (not an and-list, whose subshell would wait for the queue)
(cd "$Q" || exit 1; nohup setsid bash tools/study/xlpos_queue.sh >> ../xlpos_queue.log 2>&1 < /dev/null &)
echo "queue restarted on $(git -C "$Q" log --oneline -1 | cut -c1-80)"
echo "status: (cd $Q && bash tools/study/xlpos_queue.sh status)"

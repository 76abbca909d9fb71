# The tier loop shared by tools/study/evidence_queue.sh and tools/study/decisive_queue.sh (sourced, not run). The caller sets
#   NAME     its name in messages          TIERS    the tiers to run, in order (checked against KNOWN)
#   KNOWN    the tiers it accepts          APART    the tiers trained each in a work directory of its own
#   S, P, NICE                             and defines  tier_args TIER  (fills the array ARGS; for status it may
#   set SKIP to a line to print instead of running, and TIER to the --tier to ask status for)
# then calls  queue_main "$@". Consecutive tiers other than APART train in one call (joined by commas), so a job
# slot freed at a tier's end goes to the next tier's first job at once; `status` prints one table per tier.

queue_main() {
  STAGE=main
  case ${1:-} in
    "") ;;
    status) STAGE=status ;;
    *) echo "$NAME: unknown argument '$1' (none, or status)" >&2; exit 2 ;;
  esac
  local tier group=""
  for tier in $TIERS; do
    case " $KNOWN " in
      *" $tier "*) ;;
      *) echo "$NAME: unknown tier '$tier' ($(echo "$KNOWN" | sed 's/ /, /g; s/, \([^,]*\)$/ or \1/'))" >&2
         exit 2 ;;
    esac
  done
  for tier in $TIERS; do
    if [[ " $APART " == *" $tier "* ]] || [ "$STAGE" = status ]; then
      [ -n "$group" ] && queue_run "$group"
      group=""
      queue_run "$tier"
    else
      group=${group:+$group,}$tier
    fi
  done
  [ -n "$group" ] && queue_run "$group"
  return 0
}

queue_run() {  # $1: one tier, or several joined by commas
  ARGS=() SKIP="" TIER=$1
  tier_args "$1"
  if [ "$STAGE" = status ]; then
    [ -n "$SKIP" ] && { echo "$SKIP"; return; }
    python3 -m onmt_xl.experiments evidence --stage status --steps "$S" --tier "$TIER" --parallel "$P" "${ARGS[@]}" \
      || exit 1
    return
  fi
  echo "[$NAME] $(date -u '+%F %T') tier $1"
  nice -n "$NICE" python3 -m onmt_xl.experiments evidence --stage main --steps "$S" --tier "$TIER" --parallel "$P" \
    "${ARGS[@]}" || { echo "[$NAME] tier $1 failed ($?)" >&2; exit 1; }
}

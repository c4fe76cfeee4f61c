# bash completion for hangscan(1): installed as share/bash-completion/completions/hangscan.
#
# Options come from the binary's own `--help` (of the subcommand being typed), so the
# completion never disagrees with the hangscan it completes; values are completed where their
# set is known (formats, unwinders, pids, directories, files).

# The options `hangscan [SUBCOMMAND] --help` lists, one per line.
_hangscan_options() {
  local exe=$1 sub=$2
  "$exe" ${sub:+"$sub"} --help 2>/dev/null | sed -nE 's/^  (-[^ ]+).*/\1/p' | tr ',' '\n'
}

_hangscan() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev= exe=${COMP_WORDS[0]} sub= i
  [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
  local subcommands="dump core gcore doctor agent pdsh watch k8s"
  for ((i = 1; i < COMP_CWORD; i++)); do
    case " $subcommands " in *" ${COMP_WORDS[i]} "*) sub=${COMP_WORDS[i]}; break ;; esac
  done
  COMPREPLY=()

  case $prev in
    --format) mapfile -t COMPREPLY < <(compgen -W "text json dot svg folded html" -- "$cur"); return ;;
    --unwinder) mapfile -t COMPREPLY < <(compgen -W "libdw libunwind" -- "$cur"); return ;;
    --threads) mapfile -t COMPREPLY < <(compgen -W "main all gil matching" -- "$cur"); return ;;
    --granularity) mapfile -t COMPREPLY < <(compgen -W "function line pc" -- "$cur"); return ;;
    --gcore) mapfile -t COMPREPLY < <(compgen -W "one-per-group suspects all" -- "$cur"); return ;;
    -R) mapfile -t COMPREPLY < <(compgen -W "ssh rsh exec mrsh krb4 qsh mqsh xcpu" -- "$cur"); return ;;
    -p | --pid)
      mapfile -t COMPREPLY < <(compgen -W "$(cd /proc && printf '%s ' [0-9]*)" -- "$cur"); return ;;
    --slurm-job | --jobid)
      command -v squeue >/dev/null &&
        mapfile -t COMPREPLY < <(compgen -W "$(squeue -h -o %i 2>/dev/null)" -- "$cur")
      return ;;
    -o | --output-dir | --gcore-dir | --output | --sysroot | --lib-path | --copy-agent)
      mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return ;;
    --agent-path | --exe | --hostfile | --remote-setup | --log | --html | --logs)
      mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
    --match | --thread-regex | --top | --samples | --interval | --timeout | --timeout-ms | -w | -f | \
      --max-size | --gcore-max-size | --signal | --node | --exclude-step | --write-core | --for | --rate | \
      --wait-ms | --stall)
      return ;;   # a value nobody can guess
  esac

  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_hangscan_options "$exe" "$sub")" -- "$cur")
  elif [ -z "$sub" ]; then
    mapfile -t COMPREPLY < <(compgen -W "$subcommands" -- "$cur")
  elif [ "$sub" = core ]; then
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
}

complete -F _hangscan hangscan

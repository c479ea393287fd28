# bash completion for vault                                  -*- shell-script -*-
# Load with: source <(vault completion bash)

_vault() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null 2>&1; then
        _init_completion || return
    else
        COMPREPLY=()
        cur="${COMP_WORDS[COMP_CWORD]}"
        prev="${COMP_WORDS[COMP_CWORD-1]}"
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi

    local commands="init put add get rm ls uuid groups check passwd unlock lock export import rekey completion help"
    local global="--vault --app --group --key-file --passphrase-fd --help --version"
    local internet="--server --protocol --port --path"

    case "$prev" in
        --vault) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --key-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --kdf-cost) COMPREPLY=($(compgen -W "moderate interactive minimum" -- "$cur")); return ;;
        --passphrase-fd|--timeout) return ;;
        --protocol) COMPREPLY=($(compgen -W "https http ftp ftps ssh imap imaps smtp pop3 pop3s ldap ldaps smb" -- "$cur")); return ;;
        --app|--group|--server|--port|--path|--label|--comment|--service) return ;;
    esac

    # The command is the first word that is not an option or an option's value.
    local i command="" scope=()
    for ((i = 1; i < cword; i++)); do
        case "${words[i]}" in
            --vault|--app|--group|--key-file) scope+=("${words[i]}" "${words[i+1]}"); ((i++)) ;;
            --passphrase-fd|--kdf-cost) ((i++)) ;;
            --server|--protocol|--port|--path|--label|--comment|--service) ((i++)) ;;
            -*) ;;
            *) command="${words[i]}"; break ;;
        esac
    done

    if [[ -z "$command" ]]; then
        COMPREPLY=($(compgen -W "$commands $global" -- "$cur"))
        return
    fi

    local options=""
    case "$command" in
        put) options="--trim --label --comment $internet" ;;
        add) options="--trim --label --comment $internet" ;;
        get) options="--json $internet" ;;
        rm) options="--all $internet" ;;
        ls) options="--service --json $internet" ;;
        uuid|groups|check) options="--json" ;;
        init) options="--passphrase --kdf-cost" ;;
        passwd) options="--remove --kdf-cost" ;;
        unlock) options="--timeout" ;;
        export) options="--kdf-cost" ;;
        import) options="--replace" ;;
        rekey) options="--kdf-cost" ;;
        completion) COMPREPLY=($(compgen -W "bash" -- "$cur")); return ;;
        help) COMPREPLY=($(compgen -W "$commands" -- "$cur")); return ;;
    esac

    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$options $global" -- "$cur"))
        return
    fi
    case "$command" in
        put|add|get|rm)
            local services
            services=$(command vault "${scope[@]}" ls 2>/dev/null | awk -F '\t' '$1 == "generic" { print $2 }' | sort -u)
            COMPREPLY=($(compgen -W "$services" -- "$cur"))
            ;;
    esac
}
complete -F _vault vault

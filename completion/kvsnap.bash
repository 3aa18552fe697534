# kvsnap.bash: bash completion for kvsnap(1).  make install puts it in
# $(PREFIX)/share/bash-completion/completions/kvsnap (bash-completion loads
# it on first use); without bash-completion, `source` it from ~/.bashrc.
#
# Completes the commands, each command's flags (the global ones anywhere),
# flag values (policies, quantizations, backends, files, directories), files
# for ingest and ask, and DOC as the names and id prefixes that
# `kvsnap ls --json` lists when the store can be read.  Plain bash: none of
# bash-completion's helpers are needed.

# Flags that take a value (the value is the next word).
_kvsnap_takes_value() {
	case $1 in
	-s|--socket|--state|-m|--model|--backend|--name|--file|-n|--temp|--top-p|--seed|--stop|\
	--policy|--ratio|--budget|--chunk|--opts|--quant|-t|--threads|--older-than|\
	--max-size|--keep|-p|--prompt|--texts|-N|--tokens|-q|--delta|--target-saving|\
	--regroup|-o|--output|--examples|--d-r|--max-tokens|--min-tokens|--gen-max|\
	--checkpoint|--checkpoint-every|--eval|--fortunes|--words|--labels|--label-cache|\
	--label-floor|--shared|--shared-auth|-k|--top|--docs|--mode|--min-conf|--judge-tokens|--part-tokens) return 0 ;;
	esac
	return 1
}

# The flags of command $1 (the global ones come with every command).
_kvsnap_flags() {
	local global="-s --socket --state -m --model --backend --json --version -h --help"
	local engine="--policy --ratio --budget --chunk --opts --quant -t --threads"
	case $1 in
	ingest) echo "$global --name --encoding --force --share --part-tokens --local $engine" ;;
	query) echo "$global -n --temp --top-p --seed --stop --file --encoding -v --verbose --local --docs --all --top --mode --min-conf --judge-tokens $engine" ;;
	shrink) echo "$global --local --ratio --replace --policy --budget --chunk --opts --quant -t --threads" ;;
	prune) echo "$global --older-than --max-size --keep --dry-run --shared --shared-auth" ;;
	search) echo "$global -k --top --local" ;;
	rm) echo "$global --shared --shared-auth --profile" ;;
	ls|info|rename|stats|verify) echo "$global --shared --shared-auth" ;;
	generate) echo "$global -p --prompt -n --temp --top-p --seed --raw -t --threads -v --verbose" ;;
	tokenize) echo "$global --no-special" ;;
	ask) echo "$global --policy --ratio --budget --chunk --opts -n -t --threads --compare -v --verbose" ;;
	pod-calibrate) echo "$global --texts -N --tokens -q --delta --target-saving --regroup -o --output -t --threads" ;;
	train-heads) echo "$global -o --output --examples --d-r --seed --max-tokens --min-tokens --gen-max" \
		"--checkpoint --checkpoint-every --resume --eval-only --eval --fortunes --words --dump" \
		"--labels --label-cache --label-floor -t --threads" ;;
	*) echo "$global" ;;
	esac
}

# Add the words of the list $1 that start with the word being completed.
_kvsnap_words() {
	local IFS=$' \t\n'
	COMPREPLY+=($(compgen -W "$1" -- "$cur"))
}

# Files (-f) or directories (-d) starting with the word being completed;
# a further -X '!PATTERN' keeps the files matching PATTERN and every directory.
_kvsnap_paths() {
	local IFS=$'\n'
	compopt -o filenames 2>/dev/null
	[[ $# -gt 1 ]] && COMPREPLY+=($(compgen -d -- "$cur"))
	COMPREPLY+=($(compgen "$@" -- "$cur"))
}

# DOC: names and 12-digit id prefixes from `KVSNAP ls --json [--state DIR]`
# (the binary and --state of the command line; nothing when the store cannot
# be read), shell-quoted.
_kvsnap_docs() {
	local IFS=$'\n' d q
	for d in $("$1" ls --json "${@:2}" 2>/dev/null | sed -n -e h \
		-e 's/.*"name":"\(\([^"\\]\|\\.\)\{1,\}\)".*/\1/p' -e g \
		-e 's/.*"doc_id":"\([0-9a-f]\{12\}\)[0-9a-f]*".*/\1/p'); do
		printf -v q %q "$d"
		[[ $q == "$cur"* ]] && COMPREPLY+=("$q")
	done
}

_kvsnap() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev= cmd= w i npos=0
	local commands="ingest query shrink search ls info rm rename stats verify prune generate
		tokenize ask pod-calibrate train-heads selftest"
	local -a ls_cmd=("${COMP_WORDS[0]/#\~/$HOME}")
	COMPREPLY=()
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	# --flag=VALUE: bash splits it at '=' (COMP_WORDBREAKS)
	if [[ $prev == = && COMP_CWORD -ge 2 ]]; then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	elif [[ $cur == = ]]; then
		cur=
	fi
	# the command, the positional arguments before the cursor, --state
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if _kvsnap_takes_value "$w"; then
			[[ $w == --state ]] && ls_cmd+=(--state "${COMP_WORDS[i + 1]}")
			((i++))
			[[ ${COMP_WORDS[i]} == = ]] && ((i++))
		elif [[ $w == -* ]]; then
			:
		elif [[ -z $cmd ]]; then
			cmd=$w
		else
			((npos++))
		fi
	done
	case $prev in
	--backend) _kvsnap_words "cpu cuda"; return 0 ;;
	--policy) _kvsnap_words "kvzip snapkv adakv pyramidkv h2o streaming locret nacl pod full"
		return 0 ;;
	--quant) _kvsnap_words "fp16 q8 q4 q4kc q4h q4kch q6h q5h q3h k5v3h k4v2h k8v4h"; return 0 ;;
	--labels) _kvsnap_words "cis kvzip"; return 0 ;;
	--state|--fortunes|--label-cache) _kvsnap_paths -d; return 0 ;;
	--shared-auth) _kvsnap_paths -f; return 0 ;;
	-m|--model) _kvsnap_paths -f -X '!*.gguf'; return 0 ;;
	-s|--socket|--file|--texts|--regroup|-o|--output|--checkpoint|--words)
		_kvsnap_paths -f; return 0 ;;
	esac
	# any other flag's value is a number or free text
	_kvsnap_takes_value "$prev" && return 0
	if [[ $cur == -* ]]; then
		_kvsnap_words "$(_kvsnap_flags "$cmd")"
		return 0
	fi
	if [[ -z $cmd ]]; then
		_kvsnap_words "$commands"
		return 0
	fi
	case $cmd in
	ingest) _kvsnap_paths -f ;;
	ask) ((npos == 0)) && _kvsnap_paths -f ;;
	query|shrink|info|rm|rename|verify) ((npos == 0)) && _kvsnap_docs "${ls_cmd[@]}" ;;
	esac
	return 0
}
complete -F _kvsnap kvsnap

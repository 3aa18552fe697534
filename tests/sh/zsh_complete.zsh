# zsh_complete.zsh FPATH_DIR LINE: the matches zsh's completion system
# offers for the end of LINE, one a line (not a test itself: install.sh
# runs it).  An interactive zsh in a pseudo-terminal (zsh/zpty) loads the
# completion functions of FPATH_DIR, gets LINE and a TAB, and reports every
# match compadd adds; the shell exits once the completion is over.
# Status 2 if the shell did not start, 3 if the completion did not end
# within 10 s.
zmodload zsh/zpty || exit 2
zpty z zsh -f -i
zpty -w z "PS1=''; PS2=''; unsetopt prompt_sp; fpath=(${(q)1} \$fpath)"
zpty -w z 'autoload -Uz compinit; compinit -u -D; bindkey "^I" complete-word'
zpty -w z '_cap_end() { print -r -- "<<END>>"; exit }; comppostfuncs=(_cap_end)'
# every match added (not the -O/-A/-D calls that only collect) is printed
zpty -w z 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi; local -a _h; builtin compadd -A _h "$@"; local x; for x in $_h; do print -r -- "<<M>>$x"; done; builtin compadd "$@" }'
# the marker is split in the command so that only its output matches
zpty -w z 'print -r -- "<<REA""DY>>"'
# read_until MARKER: the shell's output into $out until MARKER (10 s at most)
read_until() {
	local line
	integer n=0
	out=
	while (( n++ < 200 )); do
		if zpty -r -t z line 2>/dev/null; then
			out+=$line
			[[ $out == *"$1"* ]] && return 0
		else
			sleep 0.05
		fi
	done
	return 1
}
read_until '<<READY>>' || { zpty -d z; exit 2; }
zpty -w -n z "$2"$'\t'
read_until '<<END>>'
integer done=$(( ! $? ))
zpty -d z
out=${out//$'\r'/}
for l in ${(f)out}; do
	[[ $l == *'<<M>>'* ]] && print -r -- ${l##*'<<M>>'}
done
(( done )) || exit 3

#!/usr/bin/env bash
# make install and running from anywhere (issue 16): install-files (make
# install without its build step, so the BUILD under test is what gets
# installed) into a DESTDIR and into a second PREFIX; then, from another
# directory with a clean environment, the installed kvsnap finds the
# installed model through its share dir and the Locret heads beside it,
# kvsnapd starts from the installed config and serves an ingest and a
# query, $KVSNAP_MODEL and -m override the share dir, a missing model is an
# error naming every place looked (both programs), the source tree's binary
# finds models/ from another cwd; the unit and the config name PREFIX's
# paths (systemd-analyze verify of the installed unit); the man pages render
# lint-clean and document every flag each command's -h lists; bash and zsh
# completion offer commands, flags, values and DOC names; make uninstall
# leaves nothing.
set -u
. "$(dirname "$0")/lib.bash"
need "$MODEL" "$K" "$D" command:python3 command:groff command:zsh
scratch install
ROOT=$PWD HEADS=${MODEL%.gguf}.locret.gguf
NAME=${MODEL##*/}
R=$T/root P=/usr/local
I=$R$P
O=$T/opt
EXPECT_TIMEOUT=120
mkdir -p "$T/elsewhere" "$T/home" "$T/docs"
prose Apache-2.0 60 > "$T/docs/small.txt"

# make as a fresh shell runs it (not a sub-make of `make check`)
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory "$@"; }
# a clean environment: PATH, HOME and the sanitizers' settings only
E=(env -i PATH=/usr/bin:/bin HOME="$T/home")
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
	[ -n "${!v:-}" ] && E+=("$v=${!v}")
done

# --- make install-files into DESTDIR, and into a second PREFIX ---
(umask 077 && mk install-files BUILD="$BUILD" DESTDIR="$R" PREFIX="$P") > "$T/make.out" 2>&1
ok "make install-files DESTDIR=... PREFIX=$P" $? || tail -5 "$T/make.out" | sed 's/^/#   /'
for f in bin/kvsnap bin/kvsnapd "share/kvsnap/$NAME" "share/kvsnap/${HEADS##*/}" \
	"share/kvsnap/${HEADS##*/}.sha256" share/man/man1/kvsnap.1 share/man/man8/kvsnapd.8 \
	share/bash-completion/completions/kvsnap share/zsh/vendor-completions/_kvsnap \
	lib/systemd/system/kvsnapd.service lib/systemd/system/kvsnapd.socket \
	lib/sysusers.d/kvsnap.conf lib/tmpfiles.d/kvsnap.conf share/doc/kvsnap/kvsnapd.conf; do
	[ -s "$I/$f" ]; ok "installed $P/$f" $?
done
# the documentation (issue 30): README and every docs/ page, and the
# installed programs' help naming that folder, never the source tree's docs/
for f in README.md docs/*.md; do
	cmp -s "$f" "$I/share/doc/kvsnap/${f##*/}"; ok "installed $P/share/doc/kvsnap/${f##*/}" $?
done
DOCDIR=$I/share/doc/kvsnap
"${E[@]}" "$I/bin/kvsnap" -h 2>&1 | grep -q "^documentation: $DOCDIR "
ok "installed kvsnap -h: documentation: $P/share/doc/kvsnap" $?
"${E[@]}" "$I/bin/kvsnapd" -h 2>&1 | grep -q "^Documentation: $DOCDIR "
ok "installed kvsnapd -h: Documentation: $P/share/doc/kvsnap" $?
"${E[@]}" "$I/bin/kvsnap" ask -h 2>&1 | grep -q "$DOCDIR/POLICIES.md"
ok "installed kvsnap ask -h: --policy points at $P/share/doc/kvsnap/POLICIES.md" $?
helps=$(for c in $("$K" -h | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'); do
	"${E[@]}" "$I/bin/kvsnap" "$c" -h 2>&1; done; "${E[@]}" "$I/bin/kvsnap" ingest --local -h 2>&1
	"${E[@]}" "$I/bin/kvsnapd" -h 2>&1)
! grep -q "docs/" <<<"$helps"; ok "no installed -h names docs/ (not installed there)" $? ||
	grep "docs/" <<<"$helps" | sed 's/^/#   /'
[ -x "$I/bin/kvsnap" ] && [ -x "$I/bin/kvsnapd" ] && cmp -s "$K" "$I/bin/kvsnap" &&
	cmp -s "$MODEL" "$I/share/kvsnap/$NAME"
ok "the binaries are $BUILD's, the model the bundled one" $?
(cd "$I/share/kvsnap" && sha256sum -c --status "${HEADS##*/}.sha256")
ok "the heads' .sha256 checks from the share dir" $?
[ "$(stat -c %a "$I/lib/systemd/system/kvsnapd.service" "$I/share/doc/kvsnap/kvsnapd.conf" \
	"$I/share/kvsnap/$NAME" "$I/share/man/man1/kvsnap.1" | sort -u)" = 644 ]
ok "installed data files are 0644 whatever the umask" $?
grep -q "^model = $P/share/kvsnap/$NAME\$" "$I/share/doc/kvsnap/kvsnapd.conf"
ok "installed kvsnapd.conf: model = $P/share/kvsnap/..." $?
mk install-files BUILD="$BUILD" PREFIX="$O" > "$T/make2.out" 2>&1
ok "make install-files PREFIX=$O (no DESTDIR)" $? || tail -5 "$T/make2.out" | sed 's/^/#   /'
U=$O/lib/systemd/system/kvsnapd.service
grep -q "^ExecStart=$O/bin/kvsnapd " "$U" &&
	grep -q "^Environment=KVSNAP_MODEL=$O/share/kvsnap/$NAME\$" "$U" &&
	grep -q "^Documentation=file://$O/share/doc/kvsnap/PROTOCOL.md\$" "$U" &&
	! grep -q /usr/local/ "$U"
ok "the unit names PREFIX's kvsnapd and model, no /usr/local left" $?
grep -q "^model = $O/share/kvsnap/$NAME\$" "$O/share/doc/kvsnap/kvsnapd.conf"
ok "the example config's model is PREFIX's" $?
if command -v systemd-analyze >/dev/null; then
	out=$(systemd-analyze verify --man=no "$O/lib/systemd/system/kvsnapd.socket" "$U" 2>&1)
	[ $? -eq 0 ] && [ -z "$out" ]; ok "systemd-analyze verify of the installed unit: clean" $? ||
		echo "$out" | sed 's/^/#   /'
fi

# --- the installed kvsnap from elsewhere, clean environment ---
cd "$T/elsewhere" || exit 1
want=$("$ROOT/$K" tokenize -m "$ROOT/$MODEL" "hello world")
got=$("${E[@]}" "$I/bin/kvsnap" tokenize "hello world" 2>"$T/err")
[ -n "$want" ] && [ "$got" = "$want" ]
ok "installed kvsnap tokenize from another dir finds the share dir's model ($got)" $? ||
	sed 's/^/#   /' "$T/err"
expect_rc "installed kvsnap ask --policy locret uses the heads beside the model" 0 \
	"${E[@]}" "$I/bin/kvsnap" ask --policy locret --ratio 1/2 -n 2 "$T/docs/small.txt" "Which license?"
expect_rc "\$KVSNAP_MODEL wins over the share dir (a missing one is an error)" 2 \
	"${E[@]}" KVSNAP_MODEL="$T/no/such.gguf" "$I/bin/kvsnap" tokenize hi
grep -q "KVSNAP_MODEL names $T/no/such.gguf" "$T/err"; ok "... naming \$KVSNAP_MODEL's file" $?
ln -s "$ROOT/$MODEL" "$T/other.gguf"
expect_rc "\$KVSNAP_MODEL naming a model is used" 0 \
	"${E[@]}" KVSNAP_MODEL="$T/other.gguf" "$I/bin/kvsnap" tokenize hi
expect_rc "-m wins over \$KVSNAP_MODEL" 0 \
	"${E[@]}" KVSNAP_MODEL="$T/no/such.gguf" "$I/bin/kvsnap" tokenize -m "$T/other.gguf" hi
# the source tree's own binary from another cwd: build/../models
got=$("${E[@]}" "$ROOT/$K" tokenize "hello world" 2>"$T/err")
[ "$got" = "$want" ]; ok "the source tree's kvsnap from another dir finds models/" $? ||
	sed 's/^/#   /' "$T/err"

# --- kvsnapd: the installed config, then the share dir's model ---
: > "$T/daemon.log"
"${E[@]}" "$I/bin/kvsnapd" --config "$O/share/doc/kvsnap/kvsnapd.conf" --state "$T/state" \
	--socket "$T/d.sock" --budget 64 --chunk 64 2>"$T/daemon.log" &
DPID=$!
wait_log "info: ready" 1; ok "installed kvsnapd starts with the installed config" $?
grep -q "model $O/share/kvsnap/$NAME " "$T/daemon.log"; ok "... loading the config's model" $? ||
	sed 's/^/#   /' "$T/daemon.log"
C=("${E[@]}" "$I/bin/kvsnap")
expect_rc "installed kvsnap ingest through it" 0 \
	"${C[@]}" ingest -s "$T/d.sock" --name "install test" "$T/docs/small.txt"
expect_rc "installed kvsnap query through it" 0 \
	"${C[@]}" query -s "$T/d.sock" -n 4 "install test" "Which license is this?"
[ -s "$T/out" ]; ok "... answers" $?
kill -TERM "$DPID"; wait_exit; ok "it stops on SIGTERM, exit 0" $?
: > "$T/daemon.log"
"${E[@]}" "$I/bin/kvsnapd" --state "$T/state" --socket "$T/d.sock" --policy locret \
	2>"$T/daemon.log" &
DPID=$!
wait_log "info: ready" 1
ok "installed kvsnapd without config or -m starts" $?
grep -q "model $I/share/kvsnap/$NAME " "$T/daemon.log" &&
	grep -q "policy=locret:.*heads=[0-9a-f]\{64\}" "$T/daemon.log"
ok "... with the share dir's model and the heads beside it" $? || sed 's/^/#   /' "$T/daemon.log"
kill -TERM "$DPID"; wait_exit; ok "... and stops, exit 0" $?

# --- no model anywhere: both programs name every place looked ---
mv "$I/share/kvsnap/$NAME" "$T/moved.gguf"
expect_rc "installed kvsnap without a model: not found" 2 "${E[@]}" "$I/bin/kvsnap" tokenize hi
grep -q "\$KVSNAP_MODEL (not set), $I/share/kvsnap/$NAME (No such file or directory), $I/models/$NAME (No such file or directory)" "$T/err"
ok "... naming \$KVSNAP_MODEL, the share dir and models/" $? || sed 's/^/#   /' "$T/err"
grep -q "pass -m GGUF, set KVSNAP_MODEL" "$T/err"; ok "... and the fixes" $?
expect_rc "installed kvsnapd without a model does not start" 1 \
	"${E[@]}" "$I/bin/kvsnapd" --state "$T/state" --socket "$T/d2.sock"
grep -q "looked at \$KVSNAP_MODEL (not set), $I/share/kvsnap/$NAME " "$T/err" && [ ! -e "$T/d2.sock" ]
ok "... naming the places looked" $? || sed 's/^/#   /' "$T/err"
expect_rc "... -m still works" 0 "${E[@]}" "$I/bin/kvsnap" tokenize -m "$T/moved.gguf" hi
mv "$T/moved.gguf" "$I/share/kvsnap/$NAME"
cd "$ROOT" || exit 1

# --- man pages: render lint-clean, document every command and flag ---
for m in man1/kvsnap.1 man8/kvsnapd.8; do
	out=$(groff -man -Tutf8 -ww -z "$I/share/man/$m" 2>&1)
	[ $? -eq 0 ] && [ -z "$out" ]; ok "groff -ww: $m without warnings" $? || echo "$out" | sed 's/^/#   /'
	if command -v mandoc >/dev/null; then
		out=$(mandoc -T lint "$I/share/man/$m" 2>&1)
		[ $? -eq 0 ] && [ -z "$out" ]; ok "mandoc -T lint: $m clean" $? || echo "$out" | sed 's/^/#   /'
	fi
	groff -man -Tutf8 -P-cbou "$I/share/man/$m" 2>/dev/null | grep -q "^EXIT STATUS"
	ok "$m renders with its EXIT STATUS section" $?
done
{ cat docs/man/kvsnap.1; echo ".BOGUS macro"; echo ".TP"; } > "$T/broken.1"
[ -n "$(groff -man -Tutf8 -ww -z "$T/broken.1" 2>&1)" ]; ok "a broken page is reported (the lint can fail)" $?
cmds=$("$K" -h | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
[ "$(echo "$cmds" | wc -l)" -ge 16 ]; ok "kvsnap -h lists the commands" $?
. completion/kvsnap.bash
missing=
for c in $cmds; do
	grep -q "^\.SS \"\?${c//-/\\\\-}\( \|\"\|\$\)" docs/man/kvsnap.1 || missing+=" man:$c"
	for h in "$c" "$c --local"; do
		[ "$h" = "$c --local" ] && [ "$c" != ingest ] && [ "$c" != query ] && continue
		for f in $("$K" $h -h 2>&1 | grep -o -- '--[a-z][a-z-]*' | sort -u); do
			grep -q -- "${f//-/\\\\-}" docs/man/kvsnap.1 || missing+=" man:$c:$f"
			[[ " $(_kvsnap_flags "$c") " == *" $f "* ]] || missing+=" bash:$c:$f"
			grep -q -- "$f[^a-z-]" completion/_kvsnap || missing+=" zsh:$f"
		done
	done
done
for f in $("$D" -h | grep -o -- '--[a-z][a-z-]*' | sort -u); do
	grep -q -- "${f//-/\\\\-}" docs/man/kvsnapd.8 || missing+=" kvsnapd.8:$f"
done
[ -z "$missing" ]; ok "every command and every flag of each -h is in the man pages and completion" $? ||
	echo "#   missing:$missing"

# --- bash completion (the installed file) ---
. "$I/share/bash-completion/completions/kvsnap"
comp() { # words...: COMPREPLY for the last word, one per line, in $T/comp
	COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
	_kvsnap
	printf '%s\n' "${COMPREPLY[@]}" > "$T/comp"
}
has() { local w; for w; do grep -qxF -- "$w" "$T/comp" || return 1; done; }
comp kvsnap ""; has $cmds && [ "$(wc -l < "$T/comp")" -eq "$(echo "$cmds" | wc -l)" ]
ok "bash: kvsnap <TAB> offers exactly the commands" $?
comp kvsnap q; [ "$(cat "$T/comp")" = query ]; ok "bash: kvsnap q<TAB> -> query" $?
comp kvsnap query --t; has --temp --top --top-p --threads && [ "$(wc -l < "$T/comp")" -eq 4 ]
ok "bash: query --t<TAB> -> --temp --top --top-p --threads" $?
comp kvsnap --json query -n 4 --; has --seed --file --local; ok "bash: flags after global flags and values" $?
comp kvsnap --backend ""; has cpu cuda; ok "bash: --backend values" $?
comp kvsnap ask --policy lo; [ "$(cat "$T/comp")" = locret ]; ok "bash: --policy values" $?
comp kvsnap ingest "$T/docs/sm"; has "$T/docs/small.txt"; ok "bash: ingest completes files" $?
comp "$ROOT/$K" info --state "$T/state" ""; has 'install\ test' "$("$K" ls --state "$T/state" --json | sed -n 's/.*"doc_id":"\([0-9a-f]\{12\}\).*/\1/p')"
ok "bash: DOC names (shell-quoted) and id prefixes from kvsnap ls --json" $? || sed 's/^/#   /' "$T/comp"
comp "$ROOT/$K" query --state "$T/state" inst; [ "$(cat "$T/comp")" = 'install\ test' ]
ok "bash: query DOC completes a name's prefix" $?
comp "$ROOT/$K" query --state "$T/state" "install test" ""; [ ! -s "$T/comp" ] || [ -z "$(cat "$T/comp")" ]
ok "bash: nothing offered for the question" $?
comp "$ROOT/$K" rm --state "$T/nothing-here" ""; [ -z "$(cat "$T/comp")" ]
ok "bash: no DOC names when the store cannot be read" $?

# --- zsh completion (the installed file) ---
Z=$I/share/zsh/vendor-completions
zc() { timeout 30 zsh tests/sh/zsh_complete.zsh "$1" "$2" > "$T/comp" 2>/dev/null; }
zc "$Z" "kvsnap "; has $cmds; ok "zsh: kvsnap <TAB> offers the commands" $?
zc "$Z" "kvsnap query --t"; has --temp --top --top-p --threads; ok "zsh: query --t<TAB>" $?
zc "$Z" "kvsnap --backend "; has cpu cuda; ok "zsh: --backend values" $?
zc "$Z" "$ROOT/$K info --state $T/state "; has 'install\ test'; ok "zsh: DOC names from kvsnap ls --json" $? ||
	sed 's/^/#   /' "$T/comp"
zc "$T/nowhere" "kvsnap query --t"; ! has --temp; ok "zsh: without _kvsnap nothing is offered (the check can fail)" $?

# --- make uninstall ---
mk uninstall DESTDIR="$R" PREFIX="$P" > "$T/make.out" 2>&1; ok "make uninstall" $?
left=$(find "$R" -type f | sed "s|^$R||")
[ -z "$left" ]; ok "make uninstall leaves no file" $? || echo "$left" | sed 's/^/#   /'
[ ! -d "$I/share/kvsnap" ]; ok "... nor the share dir" $?
finish

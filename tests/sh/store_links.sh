#!/usr/bin/env bash
# A state directory whose owner planted links (issue 26, defect 3): LMDB
# opens lock.mdb and data.mdb by name and writes its lock header into
# lock.mdb even for `kvsnap ls`, so a lock.mdb symlink made root overwrite
# the link's target.  Symbolic links, hard links and special files named
# lock.mdb or data.mdb are refused before LMDB opens them (exit 5 as any
# store that cannot be opened, the file
# named), and the target's bytes stay as they were.  Run as any user; the
# store's owner and the victim are the same here, which does not matter:
# the store never follows the link.
set -u
. "$(dirname "$0")/lib.bash"
need "$K"
scratch store-links
S=$T/state
"$K" rename nothing other --state "$S" >/dev/null 2>&1 # creates an empty store
[ -f "$S/data.mdb" ] && [ -f "$S/lock.mdb" ]; ok "an empty store made" $?
printf 'precious bytes that must not change\n' > "$T/victim"
cp "$T/victim" "$T/victim.orig"

# a planted lock.mdb symlink
rm "$S/lock.mdb"
ln -s "$T/victim" "$S/lock.mdb"
for cmd in "ls" "stats" "info x" "verify"; do
	# shellcheck disable=SC2086 # the command's words
	expect_rc "kvsnap $cmd with a lock.mdb symlink: refused" 5 "$K" $cmd --state "$S"
	grep -q "lock.mdb is a symbolic link" "$T/err"; ok "$cmd: the link named" $? ||
		sed 's/^/#   /' "$T/err" | tail -2
	cmp -s "$T/victim" "$T/victim.orig"; ok "$cmd: the link's target unchanged" $?
done
rm "$S/lock.mdb"

# a hard link to another file as lock.mdb
ln "$T/victim" "$S/lock.mdb"
expect_rc "kvsnap ls with a hard-linked lock.mdb: refused" 5 "$K" ls --state "$S"
grep -q "lock.mdb is a hard link" "$T/err"; ok "the hard link named" $?
cmp -s "$T/victim" "$T/victim.orig"; ok "its other name's bytes unchanged" $?
rm "$S/lock.mdb"

# a FIFO as lock.mdb: refused, never opened (an open would block)
mkfifo "$S/lock.mdb"
EXPECT_TIMEOUT=10 expect_rc "kvsnap ls with a FIFO lock.mdb: refused" 5 "$K" ls --state "$S"
grep -q "lock.mdb is a special file" "$T/err"; ok "the FIFO named" $?
rm "$S/lock.mdb"

# data.mdb as a symlink to the real file elsewhere
mv "$S/data.mdb" "$T/data.real"
ln -s "$T/data.real" "$S/data.mdb"
expect_rc "kvsnap ls with a data.mdb symlink: refused" 5 "$K" ls --state "$S"
grep -q "data.mdb is a symbolic link" "$T/err"; ok "the data.mdb link named" $?
rm "$S/data.mdb"
mv "$T/data.real" "$S/data.mdb"

# the store as it should be opens again (lock.mdb recreated by LMDB)
expect_rc "the repaired store opens" 0 "$K" ls --state "$S"
finish

#!/usr/bin/env bash
# Jobs run with least privilege (docs/security.md), with real processes on
# one node: a job as nobody makes files owned by nobody and starts in its
# directory; a job's environment is the documented set and nothing of the
# node's, and with --inherit-env still none of its secrets; the database
# URL and a PostgreSQL password are in no job's environment and in no
# process's argv a job can read; an env-file is read for a job only when
# its user could read it and never when it is the node's own URL file;
# the SQLite files are 0600; every bad input is an error at `job add` or
# the run's recorded error, and the node and its other jobs go on.
# SQLite or, given "pg", PostgreSQL.  The user switch needs root (CI runs
# as root); without it those parts are left out and the test ends as
# skipped (77) once everything else has passed.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

ROOT=0
[ "$(id -u)" -eq 0 ] && getent passwd nobody >/dev/null && ROOT=1
SECRET="zq$RANDOM$RANDOM-pw"   # the node's password: found nowhere else

# The jobs write into pub/, which nobody may write to; $T itself only
# needs to be passable.
chmod 711 "$T"
mkdir "$T/pub"
chmod 1777 "$T/pub"

# json_run JOB FIELD [DB FLAGS]: FIELD of the job's first attempt
json_run() {
  local job=$1 field=$2
  shift 2
  dbc runs --job "$job" --format json --limit 0 "$@" | python3 -c '
import json, sys
rows = [r for r in json.load(sys.stdin) if r["attempt"] == 1 and r["state"] != "scheduled"]
v = rows[0][sys.argv[1]] if rows else None
print("" if v is None else v, end="")' "$field"
}
finished() { [ -n "$(json_run "$1" state "${@:2}")" ]; }
wait_run() { wait_until 120 finished "$@" || fail "$1: no finished run within 30 s"; }

# ---- what `job add` refuses at once (nothing is written) --------------
expect_add_error() { # WHAT MESSAGE ARGS...
  local what=$1 msg=$2 out rc=0
  shift 2
  out=$(dbc job add "$@" 2>&1) || rc=$?
  [ "$rc" -eq 2 ] || fail "$what: exit $rc, want 2 ($out)"
  [[ "$out" == *"$msg"* ]] || fail "$what: message '$out' lacks '$msg'"
  pass "job add refuses $what: $msg"
}
expect_add_error "an unknown user" "--user 'no-such-user-dbcron': no such user on this host" \
  bad1 --every 1s --user no-such-user-dbcron -- true
expect_add_error "an unknown group" "--group 'no-such-group-dbcron': no such group on this host" \
  bad2 --every 1s --group no-such-group-dbcron -- true
expect_add_error "a relative --cwd" "--cwd 'srv': expected an absolute path" \
  bad3 --every 1s --cwd srv -- true
expect_add_error "a malformed --env" "--env: expected KEY=VALUE" \
  bad4 --every 1s --env "$SECRET" -- true
expect_add_error "a node's name in --env" "--env 'DBCRON_DB': names starting with DBCRON_ are set by the node" \
  bad5 --every 1s --env DBCRON_DB=sqlite:x -- true
expect_add_error "a bad --umask" "--umask '999': expected an octal umask" \
  bad6 --every 1s --umask 999 -- true
expect_add_error "a --user for a handler" "--user is only for a command" \
  bad7 --every 1s --user nobody --handler noop
expect_add_error "a --env given twice" "--env 'A' is given twice" \
  bad8 --every 1s --env A=1 --env A=2 -- true
echo '[{"name": "bad9", "every": "1s", "command": ["true"], "env": ["nope"]}]' > "$T/bad.json"
out=$(dbc job apply "$T/bad.json" 2>&1) && fail "job apply took a malformed env"
[[ "$out" == *"key 'env': expected KEY=VALUE"* ]] || fail "job apply: '$out'"
[[ "$out" != *"$SECRET"* ]] || fail "a message quoted an env value"
pass "job apply refuses a malformed env, and no message quotes a value"
assert_eq 0 "$(dbc job list --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" \
  "nothing of the refused jobs was written"

# ---- the node: secrets in its environment, its URL in a file ----------
node_url=$DBCRON_DB
[ "$BACKEND" = pg ] && node_url="$DBCRON_DB password=$SECRET" # trust auth: unused, but there
if [ "$BACKEND" = mysql ]; then
  # the node logs in as a user whose password is SECRET, given in MYSQL_PWD
  myuser="dbc_it_$$"
  my_client -e "CREATE USER '$myuser'@'127.0.0.1' IDENTIFIED BY '$SECRET'; GRANT ALL ON $MYDB.* TO '$myuser'@'127.0.0.1'"
  node_url="mysql://$myuser@${DBCRON_DB#*@}"
fi
printf '%s\n' "$node_url" > "$T/url"
chmod 600 "$T/url"
printf 'localhost:*:*:*:%s\n' "$SECRET" > "$T/pgpass"
chmod 600 "$T/pgpass"
printf 'OWN=from-file\n' > "$T/pub/ok.env"
chmod 644 "$T/pub/ok.env"
printf 'OWN=%s\n' "$SECRET" > "$T/rootonly.env"
chmod 600 "$T/rootonly.env"
printf 'A=1\nthe password is %s\n' "$SECRET" > "$T/pub/bad.env"
chmod 644 "$T/pub/bad.env"

# What a job can see: its environment, its own argv, and every process's
# argv on the host (readable by every user) -- the node's among them.
SEE='env > "$1.env"; tr "\0" " " < /proc/self/cmdline > "$1.argv"
for f in /proc/[0-9]*/cmdline; do tr "\0" " " < "$f" 2>/dev/null; echo; done > "$1.ps"
pwd > "$1.pwd"; umask > "$1.umask"; id -u > "$1.uid"; : > "$1.made"'
see_job() { # NAME FLAGS...: a job that records what it sees in pub/NAME.*
  local name=$1
  shift
  dbc job add "$name" --at now "$@" -- sh -c "$SEE" sh "$T/pub/$name" >/dev/null
}
see_job clean
see_job inherit --inherit-env --umask 027
see_job ownenv --env OWN=from-env --env PATH=/usr/bin:/bin --env-file "$T/pub/ok.env"
if [ "$ROOT" = 1 ]; then
  see_job asnobody --user nobody --cwd "$T/pub"
  see_job nbhome --user nobody --group daemon
fi
# bad inputs only the node's host can judge: the run's error
dbc job add nouser --at now --no-user-check --user no-such-user-dbcron -- true >/dev/null
dbc job add nocwd --at now --cwd /nonexistent/dbcron-dir -- true >/dev/null
dbc job add noenvfile --at now --env-file /nonexistent/dbcron.env -- true >/dev/null
dbc job add badenvfile --at now --env-file "$T/pub/bad.env" -- true >/dev/null
dbc job add stealurl --at now --env-file "$T/url" -- true >/dev/null
[ "$ROOT" = 1 ] && dbc job add stealroot --at now --user nobody --env-file "$T/rootonly.env" -- true >/dev/null
# and a job that keeps running through all of it
dbc job add steady --every 1s --misfire skip -- sh -c "$RECORD" >/dev/null

export IT_NODEVAR=node-only PGPASSWORD=$SECRET PGPASSFILE=$T/pgpass
export DBCRON_DB_FILE_UNUSED=1 # a DBCRON_* setting of the node's: never for a job
[ "$BACKEND" = mysql ] && export MYSQL_PWD=$SECRET
start_node n1 --db-file "$T/url"
unset IT_NODEVAR PGPASSWORD PGPASSFILE DBCRON_DB_FILE_UNUSED MYSQL_PWD

for j in clean inherit ownenv nouser nocwd noenvfile badenvfile stealurl steady; do wait_run "$j"; done
if [ "$ROOT" = 1 ]; then for j in asnobody nbhome stealroot; do wait_run "$j"; done; fi

# ---- the SQLite files, while the node has them open --------------------
if [ "$BACKEND" = sqlite ]; then
  db=${DBCRON_DB#sqlite:}
  for f in "$db" "$db-wal" "$db-shm"; do
    [ -e "$f" ] || fail "$f does not exist while the node runs"
    assert_eq 600 "$(stat -c %a "$f")" "$(basename "$f") is 0600"
  done
else
  echo "# PostgreSQL: no database file of ours to check"
fi

# ---- the clean environment: the documented set, nothing of the node's ---
keys() { cut -d= -f1 "$1" | LC_ALL=C sort | tr '\n' ' '; }
want="DBCRON_ATTEMPT DBCRON_FIRE_AT DBCRON_FIRE_AT_MS DBCRON_JOB DBCRON_NODE DBCRON_RUN_ID HOME LOGNAME PATH PWD SHELL USER "
# (PWD is sh's own, from the directory it starts in)
assert_eq "$want" "$(keys "$T/pub/clean.env")" "a job's environment is the documented set"
grep -qx "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "$T/pub/clean.env" ||
  fail "the default PATH is not the documented one"
grep -qx "SHELL=/bin/sh" "$T/pub/clean.env" || fail "SHELL is not /bin/sh"
home=$(getent passwd "$(id -un)" | cut -d: -f6)
grep -qx "HOME=$home" "$T/pub/clean.env" || fail "HOME is not the user's"
[ -d "$home" ] || home=/ # a home that is not there: "/"
assert_eq "$home" "$(cat "$T/pub/clean.pwd")" "a job starts in its user's home"
pass "PATH, SHELL and HOME are the documented ones"
grep -qx "OWN=from-env" "$T/pub/ownenv.env" && grep -qx "PATH=/usr/bin:/bin" "$T/pub/ownenv.env" ||
  fail "--env did not win over the env-file and the default PATH"
pass "--env and --env-file reach the job, --env last"

# ---- --inherit-env: the node's variables but none of its secrets --------
grep -qx "IT_NODEVAR=node-only" "$T/pub/inherit.env" || fail "--inherit-env did not pass the node's variables"
for v in DBCRON_DB DBCRON_DB_FILE DBCRON_DB_FILE_UNUSED PGPASSWORD PGPASSFILE MYSQL_PWD; do
  if grep -q "^$v=" "$T/pub/inherit.env"; then fail "--inherit-env passed the node's $v"; fi
done
pass "--inherit-env passes the node's variables, none of its DBCRON_* or password variables"
assert_eq 0027 "$(cat "$T/pub/inherit.umask")" "--umask reaches the job"

# ---- the URL and the password: in no environment, in no argv -----------
jobs_seen=(clean inherit ownenv)
[ "$ROOT" = 1 ] && jobs_seen+=(asnobody nbhome)
for j in "${jobs_seen[@]}"; do
  for k in env argv ps; do
    [ -s "$T/pub/$j.$k" ] || fail "$j: nothing in $j.$k (the job did not look)"
    if grep -qF -- "$SECRET" "$T/pub/$j.$k"; then fail "$j: the node's password is in its $k"; fi
    if grep -qF -- "$DBCRON_DB" "$T/pub/$j.$k"; then fail "$j: the database URL is in its $k"; fi
  done
  grep -q "node --node-id n1" "$T/pub/$j.ps" || fail "$j: the node's argv was not among those it read"
done
pass "the database URL and password are in no job's environment and in no argv a job can read"

# ---- as nobody ---------------------------------------------------------
if [ "$ROOT" = 1 ]; then
  nb=$(id -u nobody)
  assert_eq "$nb" "$(cat "$T/pub/asnobody.uid")" "--user nobody runs as nobody"
  assert_eq nobody "$(stat -c %U "$T/pub/asnobody.made")" "a file the job makes is owned by nobody"
  assert_eq "$T/pub" "$(cat "$T/pub/asnobody.pwd")" "--cwd is where it starts"
  grep -qx "USER=nobody" "$T/pub/asnobody.env" && grep -qx "LOGNAME=nobody" "$T/pub/asnobody.env" &&
    grep -qx "HOME=$(getent passwd nobody | cut -d: -f6)" "$T/pub/asnobody.env" ||
    fail "USER, LOGNAME, HOME are not nobody's"
  pass "USER, LOGNAME and HOME are the job's user's"
  assert_eq daemon "$(stat -c %G "$T/pub/nbhome.made")" "--group: a file the job makes has that group"
  assert_eq / "$(cat "$T/pub/nbhome.pwd")" "a user whose home is not there starts in /"
  assert_eq failed "$(json_run stealroot state)" "an env-file the job's user may not read: the run fails"
  e=$(json_run stealroot error)
  [[ "$e" == *"env-file '$T/rootonly.env': user 'nobody' may not read it"* ]] || fail "stealroot: '$e'"
  [[ "$e" != *"$SECRET"* ]] || fail "stealroot: the error shows the file's content"
  pass "the node reads no env-file for a user who could not"
else
  echo "# not root: the user switch is not tested here"
fi

# ---- what only the node can judge: the run's error --------------------
expect_run_error() { # JOB MESSAGE
  assert_eq failed "$(json_run "$1" state)" "$1: the run failed"
  local e
  e=$(json_run "$1" error)
  [[ "$e" == *"$2"* ]] || fail "$1: error '$e' lacks '$2'"
  [[ "$e" != *"$SECRET"* ]] || fail "$1: the error shows a secret"
  pass "$1: $2"
}
expect_run_error nouser "user 'no-such-user-dbcron' not found on node n1"
expect_run_error nocwd "cannot run 'true' in '/nonexistent/dbcron-dir': No such file or directory"
expect_run_error noenvfile "env-file '/nonexistent/dbcron.env': No such file or directory"
expect_run_error badenvfile "env-file '$T/pub/bad.env' line 2: expected KEY=VALUE"
expect_run_error stealurl "env-file '$T/url': the node keeps its own database secret there"

# ---- and the node went on ----------------------------------------------
before=$(count_runs --job steady --state succeeded)
wait_until 120 sh -c "[ \$(\"$DBCRON_BIN\" runs --job steady --state succeeded --format csv --limit 0 | tail -n +2 | grep -c .) -ge $((before + 2)) ]" ||
  fail "the steady job stopped running"
pass "the other job kept running"
stop_node n1
pass "the node stopped cleanly after every bad run"

# ---- dbcron init and an existing file others can read ------------------
if [ "$BACKEND" = sqlite ]; then
  cp "$db" "$T/old.db"
  chmod 644 "$T/old.db"
  out=$(dbc init --db "sqlite:$T/old.db" 2>&1)
  [[ "$out" == *"warning: $T/old.db is readable by every user of this host (mode 0644)"* ]] ||
    fail "init did not warn about a 0644 database: $out"
  pass "init warns about a database file others can read"
  grp=daemon
  [ "$ROOT" = 1 ] || grp=$(id -gn) # only root gives a file to another group
  dbc init --db "sqlite:$T/old.db" --group "$grp" >/dev/null
  assert_eq "640 $grp" "$(stat -c '%a %G' "$T/old.db")" "init --group makes the file 0640 and the group's"
  out=$(dbc init --db "sqlite:$T/old.db" 2>&1)
  [[ "$out" != *warning* ]] || fail "init still warns: $out"
  pass "no warning for a 0640 file"
  dbc init --db "sqlite:$T/new.db" >/dev/null
  assert_eq 600 "$(stat -c %a "$T/new.db")" "a new database file is 0600 whatever the umask ($(umask))"
fi

# ---- a node as a user of its own, with only what switching needs -------
# The way docs/security.md gives for systemd (User=, AmbientCapabilities=
# CAP_SETUID CAP_SETGID CAP_KILL), here through setpriv: the node switches
# to the job's user, stops a job of that user at its timeout, and no job
# keeps any of the node's capabilities.  About processes: SQLite only.
CAPNODE=(setpriv --reuid=daemon --regid=daemon --init-groups --inh-caps=+setuid,+setgid,+kill
  --ambient-caps=+setuid,+setgid,+kill "$DBCRON_BIN")
if [ "$ROOT" = 1 ] && [ "$BACKEND" = sqlite ] && ! "${CAPNODE[@]}" --version >/dev/null 2>&1; then
  echo "# the user daemon cannot run $DBCRON_BIN here (setpriv missing, or a directory it may not enter): not tested"
elif [ "$ROOT" = 1 ] && [ "$BACKEND" = sqlite ]; then
  cdb="sqlite:$T/pub/caps.db"
  dbc init --db "$cdb" >/dev/null
  chown daemon "$T/pub/caps.db"*
  caps='grep -E "^Cap(Inh|Prm|Eff|Amb)" /proc/self/status | awk "{ print \$2 }" | sort -u'
  dbc job add capjob --at now --user nobody --db "$cdb" \
    -- sh -c "$caps > $T/pub/capjob.caps; id -u > $T/pub/capjob.uid" >/dev/null
  dbc job add capself --at now --db "$cdb" \
    -- sh -c "$caps > $T/pub/capself.caps; id -un > $T/pub/capself.user" >/dev/null
  dbc job add captmo --at now --user nobody --timeout 1s --retries 0 --db "$cdb" \
    -- sh -c "echo \$\$ > $T/pub/captmo.pid; exec sleep 60" >/dev/null
  # root's job adds may leave a -wal or -shm of root's behind: the node, as
  # daemon, could neither open nor (in the sticky pub/) replace them
  chown daemon "$T/pub/caps.db"*
  "${CAPNODE[@]}" node --node-id cap1 --db "$cdb" >"$T/node-cap1.log" 2>&1 &
  cpid=$!
  NODE_PIDS+=("$cpid")
  for j in capjob capself captmo; do wait_run "$j" --db "$cdb"; done
  kill -TERM "$cpid"
  wait "$cpid" || fail "the node as daemon did not stop cleanly"
  assert_eq "$(id -u nobody)" "$(cat "$T/pub/capjob.uid")" "a node as daemon with CAP_SETUID runs a job as nobody"
  assert_eq 0000000000000000 "$(cat "$T/pub/capjob.caps")" "the job as nobody has no capability of the node's"
  assert_eq daemon "$(cat "$T/pub/capself.user")" "a job without --user runs as the node's user"
  assert_eq 0000000000000000 "$(cat "$T/pub/capself.caps")" "and has no capability either"
  assert_eq timed_out "$(json_run captmo state --db "$cdb")" "the node stops a job of another user at its timeout"
  if kill -0 "$(cat "$T/pub/captmo.pid")" 2>/dev/null; then fail "the timed-out job as nobody is still running"; fi
  pass "the timed-out job as nobody is gone"
fi

if [ "$ROOT" != 1 ]; then
  echo "SKIP: not root (or no user nobody): the user switch was not tested; everything else passed"
  exit 77
fi

#!/usr/bin/env bash
# The shell completions offer what the binary takes: every command of
# `dbcron --help`, every job subcommand, and every long option each one's
# --help lists.  The lists live in the --help texts (which the docs test
# checks against the parser) and the completion files are kept by hand, so
# this is what notices one falling behind the other.  Bash is driven
# through its completion function; zsh runs the real _dbcron with its
# completion builtins replaced by ones that print what they were offered
# (zsh's own widgets need a terminal).
set -euo pipefail
source "$DBCRON_TESTLIB"

BASHC=$DBCRON_SRC/dist/completion/dbcron.bash
ZSHC=$DBCRON_SRC/dist/completion/_dbcron

# The long options a --help text offers, one per line: those that start
# an indented line of the option table ("  --tz ZONE", "  -q, --quiet") and
# those in the usage line's brackets ("[--strict]", "(--cron EXPR | ...").
# Options only mentioned in prose ("their own --env") are not offers.
help_opts() {
	local h
	h=$("$DBCRON_BIN" "$@" --help 2>&1) || true
	{
		printf '%s\n' "$h" | sed -nE 's/^ +(-[a-zA-Z], )?(--[a-z][a-z0-9-]*).*/\2/p'
		printf '%s\n' "$h" | { grep -oE '[[(|] ?--[a-z][a-z0-9-]*' || true; } | sed -E 's/^[^-]*//'
	} | { grep -vxE -- '--help|--version' || true; } | sort -u
}

bash_complete() { # words... ; the last word is the one being completed
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _dbcron
		printf "%s\n" "${COMPREPLY[@]}"' _ "$BASHC" "$@"
}

# scripts/deps.sh installs zsh, so its absence is a failure, not a skip.
have_zsh=0
command -v zsh >/dev/null && have_zsh=1
zsh_complete() { # words... ; the last word is the one being completed
	zsh -f -c '
		_arguments() { local a; for a in "$@"; do print -r -- "${${a%%\[*}%%:*}"; done; }
		compadd() { local a; for a in "$@"; do
			[[ $a == -a ]] && continue; if (( ${+parameters[$a]} )); then print -rl -- ${(P)a}
			else print -r -- $a; fi; done; }
		_describe() { local -a l; l=(${(P)${@[-1]}}); print -rl -- ${l%%:*}; }
		_files() { :; }; _users() { :; }; _groups() { :; }; _normal() { :; }
		f=$1; shift
		words=("$@"); CURRENT=$#
		source "$f" >/dev/null
		_dbcron; :' _ "$ZSHC" "$@" 2>&1
}

commands=$("$DBCRON_BIN" --help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
jobsubs=$("$DBCRON_BIN" job --help 2>&1 | awk '/^  [a-z]/ { print $1 }' | sort -u)

t_section "the commands"
assert_ne "" "$commands" "dbcron --help lists commands"
got=$(bash_complete dbcron '')
for c in $commands; do
	assert_match "$got" "^$c\$" "bash: dbcron <TAB> offers $c"
done
if [ $have_zsh = 1 ]; then
	got=$(zsh_complete dbcron '')
	for c in $commands; do
		assert_match "$got" "^$c\$" "zsh: dbcron <TAB> offers $c"
	done
fi

t_section "the job subcommands"
assert_ne "" "$jobsubs" "dbcron job --help lists subcommands"
got=$(bash_complete dbcron job '')
for s in $jobsubs; do
	assert_match "$got" "^$s\$" "bash: dbcron job <TAB> offers $s"
done
if [ $have_zsh = 1 ]; then
	got=$(zsh_complete dbcron job '')
	for s in $jobsubs; do
		assert_match "$got" "^$s\$" "zsh: dbcron job <TAB> offers $s"
	done
fi

# Each command line whose options are checked: "cmd" or "job sub".
lines=()
for c in $commands; do
	case $c in
	job) for s in $jobsubs; do lines+=("job $s"); done ;;
	cron) lines+=("cron next" "cron check") ;;
	config) lines+=("config show") ;;
	calendar) lines+=("calendar add" "calendar list" "calendar show" "calendar delete") ;;
	*) lines+=("$c") ;;
	esac
done
for l in "${lines[@]}"; do
	t_section "options of dbcron $l"
	# shellcheck disable=SC2086
	opts=$(help_opts $l)
	# shellcheck disable=SC2086
	got=$(bash_complete dbcron $l --)
	for o in $opts; do
		assert_match "$got" "^$o\$" "bash: dbcron $l --<TAB> offers $o"
	done
	if [ $have_zsh = 1 ]; then
		# shellcheck disable=SC2086
		got=$(zsh_complete dbcron $l --)
		for o in $opts; do
			assert_match "$got" "^$o\$" "zsh: dbcron $l --<TAB> offers $o"
		done
	fi
done

t_section "zsh"
assert_eq 1 "$have_zsh" "zsh is installed (scripts/deps.sh), so its completion was checked"
t_done

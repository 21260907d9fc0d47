# bash completion for dbcron: commands, job subcommands and each one's long
# options; file names where a command takes a FILE or PATH.
_dbcron()
{
	local cur prev cmd sub opts
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	cmd=${COMP_WORDS[1]:-}
	sub=${COMP_WORDS[2]:-}
	case $prev in
	--db-file|--env-file|--cwd|--config|--api-token-file)
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	--format)
		COMPREPLY=($(compgen -W "table csv json iso epoch" -- "$cur"))
		return
		;;
	--misfire)
		COMPREPLY=($(compgen -W "fire_once skip catch_up" -- "$cur"))
		return
		;;
	--overlap)
		COMPREPLY=($(compgen -W "skip allow queue replace" -- "$cur"))
		return
		;;
	--node-loss)
		COMPREPLY=($(compgen -W "retry abandon" -- "$cur"))
		return
		;;
	--user)
		COMPREPLY=($(compgen -u -- "$cur"))
		return
		;;
	esac
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "cron init job node runs calendar audit events nodes lock locks serve config --config --db --db-file --help --version tag" -- "$cur"))
		return
	fi
	local db="--db --db-file --help"
	case $cmd in
	job)
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "add list show pause resume delete trigger backfill set rename apply export import-crontab --help" -- "$cur"))
			return
		fi
		case $sub in
		add) opts="--cron --every --after --at --needs --tz --misfire --max-catchup --misfire-threshold --overlap --node-loss --on-every-node --retries --retry-base --retry-cap --retry-jitter --start-jitter --spread --spread-seed --timeout --start-at --end-at --params --paused --handler --arg --user --group --cwd --env --env-file --umask --inherit-env --on-failure --on-success --on-misfire --max-silence --on-overdue --no-user-check --strict --format --max-runs --exclude-calendar --http --header --body --body-file --expect --ca-file --sql --sql-db-file --tag --priority" ;;
		set) opts="--cron --every --after --at --needs --tz --misfire --max-catchup --misfire-threshold --overlap --node-loss --on-every-node --no-on-every-node --retries --retry-base --retry-cap --retry-jitter --no-retry-jitter --start-jitter --spread --spread-seed --timeout --start-at --end-at --params --handler --arg --user --group --cwd --env --env-file --umask --inherit-env --no-inherit-env --on-failure --on-success --on-misfire --max-silence --on-overdue --no-user-check --strict --format --max-runs --exclude-calendar --http --header --body --body-file --expect --ca-file --sql --sql-db-file --tag --priority" ;;
		list|show|export|pause|resume|rename) opts="--format" ;;
		delete) opts="--force --format" ;;
		trigger) opts="--param --format" ;;
		backfill) opts="--from --to --dry-run --max-running --force --format" ;;
		apply) opts="--prune --dry-run --max-bytes --max-jobs --no-user-check --strict" ;;
		import-crontab) opts="--system --user --apply --partial --no-user-check" ;;
		esac
		if [ "$sub" = apply ] || [ "$sub" = import-crontab ]; then
			[[ $cur == -* ]] || { COMPREPLY=($(compgen -f -- "$cur")); return; }
		fi
		;;
	cron)
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "next check" -- "$cur"))
			return
		fi
		db="--help"
		if [ "$sub" = next ]; then
			opts="--tz --from --count --seed --job --db --db-file --format"
		else
			opts="--seed --format"
		fi
		;;
	calendar)
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "add list show delete --help" -- "$cur"))
			return
		fi
		opts="--dates --format"
		;;
	init) opts="--group --format" ;;
	node) opts="--node-id --workers --slow-workers --claim-batch --max-inflight --preread --claim-strategy --lease --heartbeat --grace --retention --log-runs --quiet --notify-secret-file --http --api-token-file --http-host --http-cert --http-key --metrics-max-jobs" ;;
	serve) opts="--http --api-token-file --http-host --http-cert --http-key --metrics-max-jobs" ;;
	config)
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "show --help" -- "$cur"))
			return
		fi
		opts="--config --format" ;;
	runs)
		if [ "$COMP_CWORD" -eq 2 ] && [[ $cur != -* ]]; then
			COMPREPLY=($(compgen -W "show cancel" -- "$cur"))
			return
		fi
		opts="--job --state --since --limit --format --output --follow --interval" ;;
	audit) opts="--job --since --limit --format" ;;
	events) opts="--job --state --limit --format" ;;
	nodes) opts="--format --prune" ;;
	lock) opts="--ttl --owner --wait --kill-grace --held-exit" ;;
	locks) opts="--format" ;;
	tag)
		if [ "$COMP_CWORD" -eq 2 ] && [[ $cur != -* ]]; then
			COMPREPLY=($(compgen -W "set list delete" -- "$cur"))
			return
		fi
		opts="--max-running --format" ;;
	esac
	COMPREPLY=($(compgen -W "$opts $db" -- "$cur"))
}
complete -F _dbcron dbcron

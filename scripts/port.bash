# private_port SPAN: a random loopback port P for a test server, with
# P..P+SPAN all below the kernel's ephemeral range.  A port inside that
# range is free when chosen but may be handed out a moment later as the
# local end of some outgoing connection (a client's, or one cluster member
# dialling another), and a server restarted on it then fails to bind: seen
# as "Address already in use" for a Galera member's IST port after a kill -9.
# (Sourced by scripts/pg-tmp.sh, mariadb-tmp.sh, galera-tmp.sh, pgaf-tmp.sh.)
private_port() {
  local span=${1:-0} lo=20000 hi
  hi=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "$hi" -gt $((lo + span + 1000)) ] || lo=10000
  echo $(( lo + (RANDOM * 32768 + RANDOM) % (hi - span - lo) ))
}

# Server s1 of the compose cluster (docker-compose.yml): its address on
# the compose network is @NET@.11 (run.sh writes build/ from this file,
# the placeholder replaced by the first three octets of SCHED_SUBNET).
name       = "s1"
data_dir   = "/data"
bind_addr  = "0.0.0.0"
log_level  = "info"
log_format = "json"
advertise {
  http   = "@NET@.11"
  raft   = "@NET@.11"
  gossip = "@NET@.11"
}
server {
  enabled          = true
  bootstrap_expect = 3
  retry_join       = ["@NET@.11:4648", "@NET@.12:4648", "@NET@.13:4648"]
  retry_interval   = "2s"
}

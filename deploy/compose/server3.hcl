# Server s3 of the compose cluster (docker-compose.yml): its address on
# the compose network is @NET@.13 (run.sh writes build/ from this file,
# the placeholder replaced by the first three octets of SCHED_SUBNET).
name       = "s3"
data_dir   = "/data"
bind_addr  = "0.0.0.0"
log_level  = "info"
log_format = "json"
advertise {
  http   = "@NET@.13"
  raft   = "@NET@.13"
  gossip = "@NET@.13"
}
server {
  enabled          = true
  bootstrap_expect = 3
  retry_join       = ["@NET@.11:4648", "@NET@.12:4648", "@NET@.13:4648"]
  retry_interval   = "2s"
}

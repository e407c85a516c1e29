# Server s3 of the compose cluster (docker-compose.yml): its address on
# the compose network is 172.29.46.13.
name       = "s3"
data_dir   = "/data"
bind_addr  = "0.0.0.0"
log_level  = "info"
log_format = "json"
advertise {
  http   = "172.29.46.13"
  raft   = "172.29.46.13"
  gossip = "172.29.46.13"
}
server {
  enabled          = true
  bootstrap_expect = 3
  retry_join       = ["172.29.46.11:4648", "172.29.46.12:4648", "172.29.46.13:4648"]
  retry_interval   = "2s"
}

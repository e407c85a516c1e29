# The compose cluster's client (docker-compose.yml). The image holds only
# the sched binary, so tasks use the mock driver (raw_exec stays off: there
# is no program in the image to run).
name       = "c1"
data_dir   = "/data"
bind_addr  = "0.0.0.0"
log_level  = "info"
log_format = "json"
advertise {
  http = "@NET@.21"
}
client {
  enabled = true
  servers = ["@NET@.11:4646", "@NET@.12:4646", "@NET@.13:4646"]
}

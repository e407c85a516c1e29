# Every group-level attribute and block.
job "cache" {
  group "redis" {
    count                        = 3
    max_client_disconnect        = "1h"
    shutdown_delay               = "5s"
    stop_after_client_disconnect = "90s"

    meta = {
      "cache.engine" = "redis"
    }

    constraint {
      distinct_hosts = true
    }

    constraint {
      distinct_property = "${meta.rack}"
      value             = "2"
    }

    constraint {
      attribute = "${attr.os.version}"
      version   = ">= 22.04"
    }

    constraint {
      attribute = "${attr.unique.hostname}"
      regexp    = "^cache-[0-9]+$"
    }

    constraint {
      attribute = "${attr.driver.raw_exec.version}"
      semver    = ">= 1.2.0"
    }

    constraint {
      attribute    = "${meta.features}"
      set_contains = "ssd,nvme"
    }

    affinity {
      attribute        = "${meta.zones}"
      set_contains_any = "a,b"
      weight           = -50
    }

    spread {
      attribute = "${meta.rack}"
    }

    restart {
      attempts         = 0
      interval         = "10m"
      delay            = "25s"
      mode             = "delay"
      render_templates = true
    }

    reschedule {
      attempts       = 5
      interval       = "2h"
      delay          = "30s"
      delay_function = "fibonacci"
      max_delay      = "20m"
      unlimited      = false
    }

    migrate {
      max_parallel     = 2
      health_check     = "task_states"
      min_healthy_time = "20s"
      healthy_deadline = "3m"
    }

    update {
      max_parallel = 0
      canary       = 2
    }

    ephemeral_disk {
      sticky  = true
      size    = 2048
      migrate = true
    }

    network {
      mode = "bridge"

      port "db" {
        static = 6379
        to     = 6379
      }

      port "metrics" {
        to           = 9121
        host_network = "internal"
      }

      port "admin" {}

      dns {
        servers  = ["10.0.0.53"]
        searches = ["svc.local"]
        options  = ["ndots:2"]
      }
    }

    service {
      name     = "redis"
      port     = "db"
      provider = "sched"
      task     = "redis"
    }

    scaling {
      min = 1
      max = 10

      policy {
        cooldown = "2m"

        check "mem" {
          source = "prometheus"
          query  = "avg(mem)"

          strategy "target-value" {
            target = 70
          }
        }
      }
    }

    volume "data" {
      type            = "csi"
      source          = "redis-data"
      read_only       = false
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
      per_alloc       = true
    }

    volume "certs" {
      type      = "host"
      source    = "tls"
      read_only = true
    }

    task "redis" {
      driver = "raw_exec"
    }
  }
}

# Every task-level attribute and block.
job "tasks" {
  group "g" {
    task "main" {
      driver         = "docker"
      user           = "nobody"
      kill_timeout   = "20s"
      kill_signal    = "SIGTERM"
      kind           = "connect-proxy:api"
      leader         = true
      shutdown_delay = "3s"

      config {
        image   = "redis:7"
        args    = ["--port", "6379"]
        ports   = ["db"]
        memory_hard_limit = 512
        ratio   = 0.5
        privileged = false
        labels = {
          team = "cache"
        }

        mount {
          type   = "bind"
          source = "local/redis.conf"
        }

        mount {
          type   = "tmpfs"
          target = "/scratch"
        }

        logging "syslog" {
          tag = "redis"
        }
      }

      env {
        REDIS_PORT = 6379
        DATA_DIR   = "${SCHED_ALLOC_DIR}/data"
      }

      meta {
        role = "primary"
      }

      constraint {
        attribute = "${attr.driver.docker}"
        operator  = "is_set"
      }

      affinity {
        attribute = "${node.class}"
        regexp    = "^high-mem"
      }

      service {
        name                = "redis-main"
        port                = "db"
        tags                = ["primary", "v7"]
        canary_tags         = ["canary"]
        address             = "10.1.2.3"
        address_mode        = "host"
        enable_tag_override = true

        meta {
          version = "7"
        }

        check {
          name     = "alive"
          type     = "tcp"
          port     = "db"
          interval = "10s"
          timeout  = "2s"
        }

        check {
          name           = "info"
          type           = "script"
          command        = "/usr/local/bin/redis-cli"
          args           = ["info"]
          interval       = "30s"
          timeout        = "5s"
          initial_status = "passing"
          on_update      = "ignore_warnings"
          task           = "main"
        }

        check {
          name     = "http"
          type     = "http"
          protocol = "https"
          method   = "POST"
          path     = "/health"
          interval = "15s"
          timeout  = "3s"

          header {
            Authorization = ["Bearer x"]
            X-Trace       = "on"
          }
        }
      }

      template {
        source          = "local/redis.conf.tpl"
        destination     = "local/redis.conf"
        change_mode     = "signal"
        change_signal   = "SIGHUP"
        splay           = "10s"
        perms           = "0600"
        left_delimiter  = "[["
        right_delimiter = "]]"
      }

      template {
        data        = "PORT={{ env \"SCHED_PORT_db\" }}\n"
        destination = "secrets/app.env"
        env         = true
      }

      resources {
        cpu        = 500
        cores      = 0
        memory     = 256
        memory_max = 512
        disk       = 100
        iops       = 10

        device "nvidia/gpu" {
          count = 2

          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "2 GiB"
          }

          affinity {
            attribute = "${device.model}"
            value     = "Tesla"
            weight    = 50
          }
        }
      }

      lifecycle {
        hook    = "prestart"
        sidecar = true
      }

      logs {
        disabled      = false
        max_files     = 3
        max_file_size = 15
      }

      artifact {
        source      = "https://example.com/redis.tar.gz"
        destination = "local/redis"
        mode        = "dir"

        options {
          checksum = "sha256:abc"
        }

        headers {
          User-Agent = "sched"
        }
      }

      restart {
        attempts = 4
        delay    = "5s"
      }

      volume_mount {
        volume           = "data"
        destination      = "/data"
        read_only        = true
        propagation_mode = "private"
      }

      action "flush" {
        command = "/usr/local/bin/redis-cli"
        args    = ["FLUSHALL"]
      }

      action "ping" {
        command = "redis-cli"
      }
    }
  }
}

# A realistic web service: ports, a service with an HTTP check, a template,
# an artifact, restart and update policies, configured through variables.
variable "datacenters" {
  type        = list(string)
  description = "Where to run."
  default     = ["dc1"]
}

variable "version" {
  type = string
}

variable "instances" {
  type    = number
  default = 2
}

locals {
  release = "v${var.version}"
  url     = "https://releases.example.com/web/${local.release}/web_linux_amd64.tar.gz"
}

job "web" {
  datacenters = var.datacenters
  type        = "service"

  update {
    max_parallel     = 1
    min_healthy_time = "10s"
    healthy_deadline = "3m"
    auto_revert      = true
  }

  group "frontend" {
    count = var.instances

    network {
      port "http" {
        to = 8080
      }
    }

    restart {
      attempts = 3
      interval = "5m"
      delay    = "15s"
      mode     = "fail"
    }

    service {
      name = "web"
      port = "http"
      tags = ["urlprefix-/", upper(local.release)]

      check {
        type     = "http"
        path     = "/healthz"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "server" {
      driver = "raw_exec"

      config {
        command = "local/web/web"
        args    = ["-listen", ":${NOMAD_PORT_http}", "-config", "${NOMAD_TASK_DIR}/web.conf"]
      }

      artifact {
        source      = local.url
        destination = "local/web"
      }

      template {
        destination = "local/web.conf"
        data        = <<EOT
release = "${local.release}"
alloc   = "${SCHED_ALLOC_ID}"
upstream = "{{ range service "api" }}{{ .Address }}:{{ .Port }}{{ end }}"
EOT
      }

      resources {
        cpu    = 200
        memory = 128
      }
    }
  }
}

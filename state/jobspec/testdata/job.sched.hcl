# Every job-level attribute and block.
job "billing" {
  name        = "billing-api"
  region      = "eu"
  namespace   = "payments"
  node_pool   = "large"
  datacenters = ["eu-1", "eu-2"]
  type        = "service"
  priority    = 70
  all_at_once = true

  meta {
    owner = "payments-team"
    tier  = 1
  }

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  constraint {
    attribute = "${attr.cpu.arch}"
    operator  = "!="
    value     = "arm64"
  }

  affinity {
    attribute = "${node.datacenter}"
    value     = "eu-1"
    weight    = 80
  }

  spread {
    attribute = "${node.datacenter}"
    weight    = 100

    target "eu-1" {
      percent = 60
    }

    target "eu-2" {
      percent = 40
    }
  }

  update {
    max_parallel      = 2
    health_check      = "checks"
    min_healthy_time  = "15s"
    healthy_deadline  = "4m"
    progress_deadline = "9m"
    auto_revert       = true
    auto_promote      = true
    canary            = 1
    stagger           = "45s"
  }

  group "api" {
    task "server" {
      driver = "raw_exec"
    }
  }
}

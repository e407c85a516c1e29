# A periodic batch job and a dispatch payload.
job "report" {
  type = "batch"

  periodic {
    crons            = ["0 3 * * *", "30 12 * * 1-5"]
    prohibit_overlap = true
    time_zone        = "Europe/Paris"
  }

  parameterized {
    payload       = "required"
    meta_required = ["customer"]
    meta_optional = ["format", "locale"]
  }

  group "run" {
    count = 0

    task "render" {
      driver = "raw_exec"

      dispatch_payload {
        file = "input.json"
      }
    }
  }
}

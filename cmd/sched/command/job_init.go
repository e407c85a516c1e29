package command

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

const jobInitHelp = `
Write an example job file to FILE (default: example.sched.hcl): a docker
service with a mapped port, a service with an HTTP check, an update
block and resources, each block commented. With -short, the same job
without the comments and the optional blocks. An existing file is never
overwritten. The file passes "sched job validate" as written.`

// defaultInitFile is the file `sched job init` writes when given none.
const defaultInitFile = "example.sched.hcl"

func (c *jobCLI) jobInit(args []string) int {
	fset := flag.NewFlagSet("job init", flag.ContinueOnError)
	fset.SetOutput(c.stderr)
	short := fset.Bool("short", false, "write the job without comments and optional blocks")
	fset.Usage = func() {
		fmt.Fprintf(fset.Output(), "Usage: sched job init [-short] [FILE]\n\n%s\n\nOptions:\n", strings.TrimSpace(jobInitHelp))
		fset.PrintDefaults()
	}
	if done, code := parseFlags(fset, args, 0, 1); done {
		return code
	}
	path := defaultInitFile
	if fset.NArg() == 1 {
		path = fset.Arg(0)
	}
	body := exampleJob
	if *short {
		body = exampleJobShort
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return c.fail("writing example job", fmt.Errorf("%s already exists: remove it or name another file", path))
	}
	if err != nil {
		return c.fail("writing example job", err)
	}
	if _, err := f.WriteString(body); err != nil {
		f.Close()
		os.Remove(path)
		return c.fail("writing example job", err)
	}
	if err := f.Close(); err != nil {
		return c.fail("writing example job", err)
	}
	fmt.Fprintf(c.stdout, "Example job file written to %s\n", path)
	return 0
}

// exampleJobShort is `sched job init -short`'s job.
const exampleJobShort = `job "example" {
  group "web" {
    network {
      port "http" {
        to = 80
      }
    }

    service {
      name = "example-web"
      port = "http"

      check {
        type     = "http"
        path     = "/"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "server" {
      driver = "docker"

      config {
        image = "nginx:1.27-alpine"
        ports = ["http"]
      }

      resources {
        cpu    = 100
        memory = 128
      }
    }
  }
}
`

// exampleJob is `sched job init`'s job: the short one with comments and
// the blocks most services set.
const exampleJob = `# An example job: one docker service with a port, a health check and
# rolling updates. Run it with "sched job run example.sched.hcl"; see
# docs/jobspec.md and docs/drivers.md for every key.
job "example" {
  # A service runs until stopped; "batch" runs to completion.
  type = "service"

  # Where the job may run.
  datacenters = ["*"]

  # How a new version replaces the running one: one allocation at a time,
  # each healthy for 10s before the next, reverting when the new version
  # never becomes healthy.
  update {
    max_parallel     = 1
    min_healthy_time = "10s"
    healthy_deadline = "3m"
    auto_revert      = true
  }

  # A group is the unit of placement: its tasks share a node and a network.
  group "web" {
    count = 1

    # The port the group needs: a dynamic host port, mapped to port 80
    # inside the container (SCHED_PORT_http inside, SCHED_HOST_PORT_http
    # on the host).
    network {
      port "http" {
        to = 80
      }
    }

    # Registered while the task runs, with its health check.
    service {
      name = "example-web"
      port = "http"
      tags = ["web"]

      check {
        type     = "http"
        path     = "/"
        interval = "10s"
        timeout  = "2s"
      }
    }

    # Restart a failed task in place up to twice in 30 minutes.
    restart {
      attempts = 2
      interval = "30m"
      delay    = "15s"
      mode     = "fail"
    }

    task "server" {
      driver = "docker"

      config {
        image = "nginx:1.27-alpine"
        ports = ["http"]
      }

      # CPU in MHz (the container's CPU shares) and memory in MB (its
      # hard limit: going over it is an "OOM Killed" exit).
      resources {
        cpu    = 100
        memory = 128
      }
    }
  }
}
`

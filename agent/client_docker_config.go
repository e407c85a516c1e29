package agent

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/schedhq/sched/client/driver/docker"
)

// DockerConfig is the client block's docker block:
//
//	docker {
//	  enabled          = true       # the driver is healthy only where the engine answers
//	  endpoint         = ""         # "": DOCKER_HOST, else unix:///var/run/docker.sock
//	  allow_privileged = false
//	  allow_caps       = [...]      # what cap_add may name; default Docker's default set
//	  volumes_enabled  = false      # host paths outside the task directory, engine volumes
//	  image_gc         = true       # remove images this client pulled once unused
//	  image_gc_delay   = "3m"
//	  pull_timeout     = "5m"       # a task's image_pull_timeout overrides it
//	}
type DockerConfig struct {
	Enabled         bool
	Endpoint        string
	AllowPrivileged bool
	AllowCaps       []string
	VolumesEnabled  bool
	ImageGC         bool
	ImageGCDelay    time.Duration
	PullTimeout     time.Duration
	// enabledSet and gcSet record that a file set the keys whose
	// default is true.
	enabledSet, gcSet bool
}

type fileDocker struct {
	Enabled         *bool     `hcl:"enabled,optional"`
	Endpoint        *string   `hcl:"endpoint,optional"`
	AllowPrivileged *bool     `hcl:"allow_privileged,optional"`
	AllowCaps       *[]string `hcl:"allow_caps,optional"`
	VolumesEnabled  *bool     `hcl:"volumes_enabled,optional"`
	ImageGC         *bool     `hcl:"image_gc,optional"`
	ImageGCDelay    *string   `hcl:"image_gc_delay,optional"`
	PullTimeout     *string   `hcl:"pull_timeout,optional"`
}

// merge applies a config file's docker block over c.
func (c *DockerConfig) merge(f *fileDocker) error {
	if f == nil {
		return nil
	}
	if f.Enabled != nil {
		c.Enabled, c.enabledSet = *f.Enabled, true
	}
	if f.ImageGC != nil {
		c.ImageGC, c.gcSet = *f.ImageGC, true
	}
	set(&c.Endpoint, f.Endpoint)
	set(&c.AllowPrivileged, f.AllowPrivileged)
	set(&c.AllowCaps, f.AllowCaps)
	set(&c.VolumesEnabled, f.VolumesEnabled)
	for _, d := range []struct {
		name string
		src  *string
		dst  *time.Duration
	}{{"image_gc_delay", f.ImageGCDelay, &c.ImageGCDelay}, {"pull_timeout", f.PullTimeout, &c.PullTimeout}} {
		if d.src == nil {
			continue
		}
		v, err := time.ParseDuration(*d.src)
		if err != nil || v <= 0 {
			return fmt.Errorf("client.docker.%s: %q is not a positive duration with units, such as 30s or 5m", d.name, *d.src)
		}
		*d.dst = v
	}
	return nil
}

// finish fills the keys left unset and checks the rest.
func (c *DockerConfig) finish() []error {
	if !c.enabledSet {
		c.Enabled, c.enabledSet = true, true
	}
	if !c.gcSet {
		c.ImageGC, c.gcSet = true, true
	}
	if c.ImageGCDelay == 0 {
		c.ImageGCDelay = docker.DefaultImageGCDelay
	}
	if c.PullTimeout == 0 {
		c.PullTimeout = docker.DefaultPullTimeout
	}
	if c.AllowCaps == nil {
		c.AllowCaps = slices.Clone(docker.DefaultAllowCaps)
	}
	var errs []error
	for i, cp := range c.AllowCaps {
		if cp == "" || strings.ContainsAny(cp, " \t,") {
			errs = append(errs, fmt.Errorf("client.docker.allow_caps[%d]: %q is not a capability name", i, cp))
		}
	}
	if c.Endpoint != "" && !strings.Contains(c.Endpoint, "://") {
		errs = append(errs, fmt.Errorf("client.docker.endpoint: %q is not an address such as unix:///var/run/docker.sock or tcp://127.0.0.1:2375", c.Endpoint))
	}
	return errs
}

// driverConfig is the driver's Config of this block.
func (c DockerConfig) driverConfig() docker.Config {
	return docker.Config{Disabled: !c.Enabled, Endpoint: c.Endpoint, AllowPrivileged: c.AllowPrivileged,
		AllowCaps: slices.Clone(c.AllowCaps), VolumesEnabled: c.VolumesEnabled, NoImageGC: !c.ImageGC,
		ImageGCDelay: c.ImageGCDelay, PullTimeout: c.PullTimeout}
}

package agent

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
)

// Nomad's agent configures its task drivers with top-level plugin
// blocks:
//
//	plugin "raw_exec" {
//	  config {
//	    enabled = true
//	  }
//	}
//
// sched configures them in the client block (client { raw_exec { ... } }).
// A plugin block for a driver sched has is read as the client block it
// stands for, key by key, so a Nomad agent file works unchanged:
// pluginDrivers is the table of what each plugin's config keys mean. A
// key sched has no equivalent for is an error naming it, as any unknown
// key; so is a plugin sched does not have. Within one file the client
// block's own keys win over a plugin block's.

// filePlugin is one plugin "NAME" block of a config file.
type filePlugin struct {
	Name string `hcl:"name,label"`
	// Args are the command line of an external plugin binary: sched runs
	// none, so they are refused (pluginClient).
	Args   *[]string         `hcl:"args,optional"`
	Config *filePluginConfig `hcl:"config,block"`
}

// filePluginConfig holds a plugin's config block undecoded: its keys are
// the plugin's, decoded by its pluginDriver.
type filePluginConfig struct {
	Body hcl.Body `hcl:",remain"`
}

// pluginDriver maps one Nomad driver plugin onto sched's client block.
type pluginDriver struct {
	// name is the plugin's (and the driver's) name.
	name string
	// apply decodes the plugin's config block and sets what it says on
	// the client block fragment c.
	apply func(body hcl.Body, c *fileClient) hcl.Diagnostics
}

// pluginDrivers is every plugin block sched reads. A driver added to the
// client gets a row here: a struct of the Nomad keys it honours (HCL
// tags, pointers for "not set"), and the assignment of each to the
// driver's own client block.
var pluginDrivers = []pluginDriver{
	{"raw_exec", pluginKeys(func(n *nomadRawExec, c *fileClient) {
		c.RawExec = &fileRawExec{Enabled: n.Enabled}
	})},
	{"exec", pluginKeys(func(n *nomadExec, c *fileClient) {
		c.Exec = &fileExec{Enabled: n.Enabled}
	})},
	{"docker", pluginKeys(func(n *nomadDocker, c *fileClient) {
		d := &fileDocker{Enabled: n.Enabled, Endpoint: n.Endpoint, AllowPrivileged: n.AllowPrivileged, AllowCaps: n.AllowCaps}
		if n.Volumes != nil {
			d.VolumesEnabled = n.Volumes.Enabled
		}
		if n.GC != nil {
			d.ImageGC, d.ImageGCDelay = n.GC.Image, n.GC.ImageDelay
		}
		c.Docker = d
	})},
}

// nomadRawExec is the raw_exec plugin's config: enabled is
// client.raw_exec.enabled.
type nomadRawExec struct {
	Enabled *bool `hcl:"enabled,optional"`
}

// nomadExec is the exec plugin's config: enabled (sched's key; Nomad's
// exec has none) is client.exec.enabled.
type nomadExec struct {
	Enabled *bool `hcl:"enabled,optional"`
}

// nomadDocker is the docker plugin's config: endpoint, allow_privileged
// and allow_caps are client.docker's keys of the same names; volumes {
// enabled } is volumes_enabled; gc { image, image_delay } are image_gc
// and image_gc_delay; enabled (sched's key) is enabled.
type nomadDocker struct {
	Enabled         *bool     `hcl:"enabled,optional"`
	Endpoint        *string   `hcl:"endpoint,optional"`
	AllowPrivileged *bool     `hcl:"allow_privileged,optional"`
	AllowCaps       *[]string `hcl:"allow_caps,optional"`
	Volumes         *struct {
		Enabled *bool `hcl:"enabled,optional"`
	} `hcl:"volumes,block"`
	GC *struct {
		Image      *bool   `hcl:"image,optional"`
		ImageDelay *string `hcl:"image_delay,optional"`
	} `hcl:"gc,block"`
}

// pluginKeys makes a pluginDriver's apply from the struct T of its keys
// and the assignment of them to the client block.
func pluginKeys[T any](assign func(*T, *fileClient)) func(hcl.Body, *fileClient) hcl.Diagnostics {
	return func(body hcl.Body, c *fileClient) hcl.Diagnostics {
		var keys T
		if diags := gohcl.DecodeBody(body, nil, &keys); diags.HasErrors() {
			return diags
		}
		assign(&keys, c)
		return nil
	}
}

// pluginClient reads a file's plugin blocks as one client block fragment
// (nil when there are none). Every block is judged before any is used:
// an error names each plugin at fault.
func pluginClient(plugins []filePlugin) (*fileClient, error) {
	if len(plugins) == 0 {
		return nil, nil
	}
	c := &fileClient{}
	var errs []error
	seen := map[string]bool{}
	for _, p := range plugins {
		i := slices.IndexFunc(pluginDrivers, func(d pluginDriver) bool { return d.name == p.Name })
		switch {
		case i < 0:
			names := make([]string, len(pluginDrivers))
			for j, d := range pluginDrivers {
				names[j] = d.name
			}
			errs = append(errs, fmt.Errorf("plugin %q: sched has no such driver (plugin blocks configure %s)", p.Name, strings.Join(names, ", ")))
			continue
		case seen[p.Name]:
			errs = append(errs, fmt.Errorf("plugin %q: set twice in one file", p.Name))
			continue
		case p.Args != nil:
			errs = append(errs, fmt.Errorf("plugin %q: args: sched's drivers are built in and take no plugin arguments", p.Name))
			continue
		}
		seen[p.Name] = true
		if p.Config == nil {
			continue
		}
		if diags := pluginDrivers[i].apply(p.Config.Body, c); diags.HasErrors() {
			errs = append(errs, fmt.Errorf("plugin %q: %s", p.Name, diags.Error()))
		}
	}
	return c, errors.Join(errs...)
}

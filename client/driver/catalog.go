package driver

import (
	"fmt"
	"log/slog"
	"slices"

	"github.com/schedhq/sched/state"
)

// Catalog maps a driver name (a task's `driver` field) to its Driver.
type Catalog map[string]Driver

// NewCatalog indexes drivers by Name; a later driver of the same name
// replaces an earlier one.
func NewCatalog(drivers ...Driver) Catalog {
	c := make(Catalog, len(drivers))
	for _, d := range drivers {
		c[d.Name()] = d
	}
	return c
}

// Builtin is every driver this package ships: raw_exec and mock.
func Builtin(logger *slog.Logger) Catalog {
	return NewCatalog(NewRawExec(logger), NewMock())
}

// Lookup returns the named driver.
func (c Catalog) Lookup(name string) (Driver, error) {
	d, ok := c[name]
	if !ok {
		return nil, fmt.Errorf("unknown driver %q (this client has %v)", name, c.Names())
	}
	return d, nil
}

// Names are the drivers' names, sorted.
func (c Catalog) Names() []string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// List returns the drivers in name order.
func (c Catalog) List() []Driver {
	out := make([]Driver, 0, len(c))
	for _, n := range c.Names() {
		out = append(out, c[n])
	}
	return out
}

// Fingerprint is the node's Drivers map: every driver's fingerprint.
func (c Catalog) Fingerprint() map[string]*state.DriverInfo {
	out := make(map[string]*state.DriverInfo, len(c))
	for n, d := range c {
		out[n] = d.Fingerprint()
	}
	return out
}

package agent

import (
	"strings"
	"testing"
	"time"
)

// server_rebalance_interval is a duration of 10s to 24h; unset it is zero,
// the client's default (5m); anything else is refused naming the key.
func TestClientServerRebalanceInterval(t *testing.T) {
	load := func(body string) (*Config, error) {
		c := &Config{}
		if err := c.LoadFile(writeConfig(t, "data_dir = \"/d\"\nclient {\n  enabled = true\n  servers = [\"10.0.0.1:4646\"]\n"+body+"}\n")); err != nil {
			return nil, err
		}
		return c, c.Finish()
	}
	for body, want := range map[string]time.Duration{
		"": 0,
		"  server_rebalance_interval = \"10s\"\n": 10 * time.Second,
		"  server_rebalance_interval = \"2m\"\n":  2 * time.Minute,
		"  server_rebalance_interval = \"24h\"\n": 24 * time.Hour,
		"  server_rebalance_interval = \"0s\"\n":  0, // explicit zero: the default
	} {
		c, err := load(body)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if got := c.Client.ServerRebalanceInterval; got != want {
			t.Errorf("%q: %v, want %v", body, got, want)
		}
	}
	for body, want := range map[string]string{
		"  server_rebalance_interval = \"5s\"\n":   "client.server_rebalance_interval: 5s is not between 10s and 24h0m0s",
		"  server_rebalance_interval = \"25h\"\n":  "client.server_rebalance_interval: 25h0m0s is not between",
		"  server_rebalance_interval = \"-1m\"\n":  "client.server_rebalance_interval: -1m0s is not between",
		"  server_rebalance_interval = \"soon\"\n": "client.server_rebalance_interval: \"soon\" is not a duration",
		"  server_rebalance_interval = 300\n":      "server_rebalance_interval",
	} {
		if _, err := load(body); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

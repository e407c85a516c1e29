package agent

import schedhttp "github.com/schedhq/sched/http"

// clusterServices are the cluster's leader duties, started before the
// scheduler's (the three-server cluster issue).
func (a *Agent) clusterServices() []leaderService { return nil }

// configureHTTPCluster gives the HTTP server its forwarder (the cluster
// issue).
func (a *Agent) configureHTTPCluster(cfg *schedhttp.Config) {}

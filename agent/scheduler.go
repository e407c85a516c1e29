package agent

import schedhttp "github.com/schedhq/sched/http"

// schedulerServices are the scheduler's leader duties (the scheduler issue).
func (a *Agent) schedulerServices() []leaderService { return nil }

// configureHTTPScheduler gives the HTTP server the scheduler's services.
func (a *Agent) configureHTTPScheduler(cfg *schedhttp.Config) {}

module github.com/schedhq/sched

go 1.26.8

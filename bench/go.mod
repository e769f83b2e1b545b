module github.com/hookd/hookd/bench

go 1.26.8

require (
	github.com/aptible/supercronic v0.2.48
	github.com/hookd/hookd v0.0.0
	github.com/sirupsen/logrus v1.9.4
)

require (
	github.com/expr-lang/expr v1.17.8 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/mattn/go-sqlite3 v1.14.53 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	golang.org/x/sys v0.49.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	mvdan.cc/sh/v3 v3.14.1 // indirect
)

replace github.com/hookd/hookd => ../

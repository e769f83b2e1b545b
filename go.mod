module github.com/hookd/hookd

go 1.26.8

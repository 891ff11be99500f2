module jobgate.dev/bench/gofloor

go 1.22

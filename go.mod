module github.com/fleetsched/fleet

go 1.26.8

require (
	github.com/google/btree v1.1.3
	github.com/stretchr/testify v1.12.1
	golang.org/x/exp v0.0.0-20261113113407-e3970619a1a4
	pgregory.net/rapid v1.3.0
)

require (
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

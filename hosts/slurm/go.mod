module github.com/fleetsched/fleet/hosts/slurm

go 1.26.8

require (
	github.com/fleetsched/fleet v0.0.0-00010101000000-000000000000
	github.com/fleetsched/fleet/importer v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/google/btree v1.1.3 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

replace (
	github.com/fleetsched/fleet => ../..
	github.com/fleetsched/fleet/importer => ../../importer
)

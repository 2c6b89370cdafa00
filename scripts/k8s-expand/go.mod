module volleytools/k8sexpand

go 1.26.0

require k8s.io/kubernetes v1.37.2

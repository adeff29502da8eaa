// Command etcd is the etcd server of go.etcd.io/etcd/server/v3, unchanged: the etcd release's
// own main (go.etcd.io/etcd/v3's main.go) calls etcdmain.Main the same way.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}

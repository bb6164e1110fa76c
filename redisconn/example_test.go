package redisconn_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/jwksverify/jwksverify/redisconn"
)

// Options name where Redis is; CheckOptions names the field it refuses.
func ExampleCheckOptions() {
	ok := redisconn.Options{
		Sentinel:            redisconn.Sentinel{Master: "mymaster", Addrs: []string{"10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"}},
		Timeout:             200 * time.Millisecond,
		AcknowledgeReplicas: 1,
	}
	fmt.Println(ok.Mode(), redisconn.CheckOptions(ok))

	bad := redisconn.Options{Cluster: redisconn.Cluster{Addrs: []string{"10.0.0.1:7000", "10.0.0.1"}}}
	err := redisconn.CheckOptions(bad)
	var oe *redisconn.OptionError
	fmt.Println(errors.Is(err, redisconn.ErrInvalidOptions), errors.As(err, &oe), oe.Field)
	// Output:
	// sentinel <nil>
	// true true Cluster.Addrs[1]
}

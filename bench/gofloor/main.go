// gofloor is the physical floor of the webhook benchmark: Go's net/http over TLS, reading the
// whole body and answering a fixed AdmissionReview. No parsing, no rules: what an admission
// webhook costs on this machine before it does any work, in the fastest common stack.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

var fixedAnswer = []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":` +
	`{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","allowed":true}}`)

const maxBodyBytes = 7 * 1024 * 1024 // the same limit as jobgate's server

func answer(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxBodyBytes)); err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(fixedAnswer)
}

func main() {
	tlsDir := flag.String("tls-dir", "", "directory with tls.crt and tls.key")
	host := flag.String("host", "127.0.0.1", "address to bind")
	port := flag.Int("port", 0, "port to bind")
	flag.Parse()
	certificate, err := tls.LoadX509KeyPair(*tlsDir+"/tls.crt", *tlsDir+"/tls.key")
	if err != nil {
		log.Fatalf("cannot load the serving certificate: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", answer)
	mux.HandleFunc("/validate", answer)
	server := &http.Server{
		Addr:              fmt.Sprintf("%s:%d", *host, *port),
		Handler:           mux,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{certificate}},
		ReadHeaderTimeout: 10 * time.Second,
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-stop
		_ = server.Close()
	}()
	fmt.Printf("go floor serving on https://%s\n", server.Addr)
	if err := server.ListenAndServeTLS("", ""); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

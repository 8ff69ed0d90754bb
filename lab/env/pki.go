package env

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// A cluster's certificates, as kubeadm would make them: a CA, the API server's serving
// certificate signed by it, and the key pair that signs ServiceAccount tokens. envtest makes its
// own otherwise, but its serving certificate names only localhost, while the lab's pods reach
// the API server at the ClusterIP of the kubernetes Service and other clusters' pods at its
// private and published addresses: in-cluster clients verify those names.

// The file names envtest reads from its certificate directory (testbed.Options.CertDir).
const (
	servingCertFile = "apiserver.crt"
	servingKeyFile  = "apiserver.key"
	saCertFile      = "sa-signer.crt"
	saKeyFile       = "sa-signer.key"
	// caFile is the CA that signed the serving certificate: kube-controller-manager's
	// --root-ca-file, which it publishes to every namespace as kube-root-ca.crt.
	caFile = "ca.crt"
	// The API server's client certificate for kubelets (--kubelet-client-certificate), signed
	// by the same CA, which the kubelets trust for client certificates: as kubeadm's
	// apiserver-kubelet-client, in system:masters, which kubelet's authorizer (a
	// SubjectAccessReview) lets read logs, exec and port-forward.
	kubeletClientCertFile = "apiserver-kubelet-client.crt"
	kubeletClientKeyFile  = "apiserver-kubelet-client.key"
	// The aggregation layer's, as kubeadm's front-proxy: a CA of its own, and the client
	// certificate the API server presents to aggregated API servers (the Calico API server),
	// which trust that CA for the user it forwards (--requestheader-client-ca-file).
	frontProxyCAFile         = "front-proxy-ca.crt"
	frontProxyClientCertFile = "front-proxy-client.crt"
	frontProxyClientKeyFile  = "front-proxy-client.key"
	// The Calico API server's serving certificate, signed by the cluster's CA, which its
	// APIService trusts.
	calicoAPIServerCertFile = "calico-apiserver.crt"
	calicoAPIServerKeyFile  = "calico-apiserver.key"
	// frontProxyClientName is the front-proxy client certificate's name (--requestheader-allowed-names).
	frontProxyClientName = "front-proxy-client"
)

// clusterPKI writes dir's certificates for a cluster whose API server is reached at ips and
// the kubernetes Service's DNS names, and returns the CA (PEM).
func clusterPKI(dir, cluster string, ips []net.IP) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := selfSigned(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "semaphore-lab-" + cluster + "-ca"},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	})
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(ca.der)
	if err != nil {
		return nil, err
	}
	serving, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: ips,
	}, caCert, ca.key)
	if err != nil {
		return nil, err
	}
	kubeletClient, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, caCert, ca.key)
	if err != nil {
		return nil, err
	}
	sa, err := selfSigned(&x509.Certificate{Subject: pkix.Name{CommonName: "service-accounts"}, KeyUsage: x509.KeyUsageDigitalSignature})
	if err != nil {
		return nil, err
	}
	calicoServing, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "calico-api"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"calico-api.calico-apiserver.svc"},
		IPAddresses: ips,
	}, caCert, ca.key)
	if err != nil {
		return nil, err
	}
	caPEM := pemBlock("CERTIFICATE", ca.der)
	files := map[string][]byte{
		caFile:                  caPEM,
		servingCertFile:         append(pemBlock("CERTIFICATE", serving.der), caPEM...),
		saCertFile:              pemBlock("CERTIFICATE", sa.der),
		kubeletClientCertFile:   pemBlock("CERTIFICATE", kubeletClient.der),
		calicoAPIServerCertFile: append(pemBlock("CERTIFICATE", calicoServing.der), caPEM...),
	}
	keys := map[string]*ecdsa.PrivateKey{servingKeyFile: serving.key, saKeyFile: sa.key, kubeletClientKeyFile: kubeletClient.key, calicoAPIServerKeyFile: calicoServing.key}
	if err := frontProxyPKI(files, keys); err != nil {
		return nil, err
	}
	if err := writePKI(dir, files, keys); err != nil {
		return nil, err
	}
	return caPEM, nil
}

// frontProxyPKI adds the aggregation layer's CA and client certificate to files and keys.
func frontProxyPKI(files map[string][]byte, keys map[string]*ecdsa.PrivateKey) error {
	ca, err := selfSigned(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "front-proxy-ca"},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	})
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(ca.der)
	if err != nil {
		return err
	}
	client, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: frontProxyClientName},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, caCert, ca.key)
	if err != nil {
		return err
	}
	files[frontProxyCAFile] = pemBlock("CERTIFICATE", ca.der)
	files[frontProxyClientCertFile] = pemBlock("CERTIFICATE", client.der)
	keys[frontProxyClientKeyFile] = client.key
	return nil
}

// writePKI writes the certificates files and the keys keys into dir, by file name.
func writePKI(dir string, files map[string][]byte, keys map[string]*ecdsa.PrivateKey) error {
	for name, key := range keys {
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		files[name] = pemBlock("EC PRIVATE KEY", der)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// keyPair is a certificate (DER) and its key.
type keyPair struct {
	der []byte
	key *ecdsa.PrivateKey
}

// issue makes a new key and a certificate of tmpl for it, signed by parent with parentKey.
func issue(tmpl, parent *x509.Certificate, parentKey crypto.Signer) (keyPair, error) {
	key, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	der, err := sign(tmpl, parent, key.Public(), parentKey)
	return keyPair{der, key}, err
}

// selfSigned makes a new key and a certificate of tmpl for it, signed by itself.
func selfSigned(tmpl *x509.Certificate) (keyPair, error) {
	key, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	der, err := sign(tmpl, tmpl, key.Public(), key)
	return keyPair{der, key}, err
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// sign signs tmpl with parent's key, valid for longer than any lab runs.
func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, key crypto.Signer) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(30 * 24 * time.Hour)
	return x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

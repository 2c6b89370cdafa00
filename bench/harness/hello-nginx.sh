# shellcheck shell=bash
# Sourced by the bench scripts (not run by itself): the one target they share, nginx with one
# worker answering `200 hello\n` on a kept-alive connection, with everything it writes under a
# scratch folder.
#   hello_nginx_conf DIR LISTEN [CONNECTIONS] [MORE]  > DIR/nginx.conf
# DIR: pid, error log and temp folders (DIR/tmp is made); LISTEN: nginx's listen argument
# (e.g. "127.0.0.1:18092", "127.0.0.1:18092 http2"); CONNECTIONS: worker_connections and the
# file limit (default 4096; above it, multi_accept and a long backlog too); MORE: further
# text inside http { } (other server blocks, http2 settings).
hello_nginx_conf() {
  local dir=$1 listen=$2 conns=${3:-4096} more=${4:-} many=
  mkdir -p "$dir/tmp"
  if [ "$conns" -gt 4096 ]; then many=1; fi
  cat <<CONF
worker_processes 1;
${many:+worker_rlimit_nofile $conns;}
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections $conns; ${many:+multi_accept on;} }
http {
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp;
  uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
  server { listen $listen${many:+ backlog=65535}; location / { return 200 "hello\n"; } }
$more
}
CONF
}

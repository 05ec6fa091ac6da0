#!/bin/bash
cat > index.html <<HTML
<h1>Hello, World</h1>
HTML
nohup busybox httpd -f -p 8080 &

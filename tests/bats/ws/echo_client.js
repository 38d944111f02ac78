// SPDX-License-Identifier: MIT
// node-ws as a client of vega-serve --ws-echo. usage: node echo_client.js URL none|deflate
'use strict';
const WebSocket = require('ws');
const url = process.argv[2];
const ws = new WebSocket(url, { perMessageDeflate: process.argv[3] === 'deflate' });
const msgs = ['hello', 'κόσμε', 'y'.repeat(100000), Buffer.from([0, 1, 2, 255])];
let i = 0;
ws.on('open', () => {
  console.log('extensions:', ws.extensions || 'none');
  ws.send(msgs[0]);
});
ws.on('message', (data, isBinary) => {
  const want = msgs[i];
  const got = isBinary ? data : data.toString();
  if (isBinary ? Buffer.compare(got, want) !== 0 : got !== want) {
    console.error('mismatch at', i);
    process.exit(1);
  }
  i++;
  if (i < msgs.length) ws.send(msgs[i]);
  else ws.close(1000, 'bye');
});
ws.on('close', (code) => {
  console.log('close:', code, 'echoed:', i);
  process.exit(i === msgs.length && code === 1000 ? 0 : 1);
});
ws.on('error', (e) => { console.error(e.message); process.exit(1); });

// SPDX-License-Identifier: MIT
// node-ws as an echo server for vega-curl's tests: listens on 127.0.0.1 (a free port, printed
// as "listening PORT"), echoes every message until killed. usage: node echo_server.js none|deflate
'use strict';
const { WebSocketServer } = require('ws');
const wss = new WebSocketServer({
  host: '127.0.0.1', port: 0, perMessageDeflate: process.argv[2] === 'deflate',
});
wss.on('listening', () => console.log('listening', wss.address().port));
wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
});

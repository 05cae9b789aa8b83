// Starts the Debian chromium headless through playwright-core with the
// flags this machine's closed network needs; shared by the browser tests.
'use strict';
const path = require('path');
const pw = require(path.join(__dirname, '../../third_party/browser/' +
    'node_modules/playwright-core'));

async function launch(profile) {
  return pw.chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
      '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}

module.exports = {launch};

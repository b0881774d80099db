import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.js';
import { AccountApp } from './account/AccountApp.js';
import './styles.css';

const root = document.getElementById('root');
// One build, two layouts: the members' account pages at /account/, the operator console elsewhere.
const account = window.location.pathname === '/account' || window.location.pathname.startsWith('/account/');
if (root) createRoot(root).render(<StrictMode>{account ? <AccountApp /> : <App />}</StrictMode>);
